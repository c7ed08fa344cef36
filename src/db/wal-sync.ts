// Durable acknowledgements for the group committer (docs/reliability.md, "Group commit"): under synchronous=FULL
// the write connection commits without SQLite's own fsync (synchronous=NORMAL) and the WAL is flushed here, on
// libuv's thread pool, before any member of the commit is acknowledged.
import { closeSync, fdatasync, openSync } from 'node:fs';

/** One flush of the WAL to stable storage: calls `done` once what was written before the call is durable. */
export type SyncWal = (done: (err: Error | null) => void) => void;

/** A write waiting for its commit to be durable. */
export interface DurableWaiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Counters of the flushes since the database was opened. */
export interface WalSyncStats {
  /** Flushes that succeeded. */
  syncs: number;
  /** Flushes that failed: their writes were answered with the storage error. */
  failedSyncs: number;
}

/**
 * `fdatasync` of the database's WAL file. The file is opened read-only at the first flush (SQLite creates it with
 * the first write) and kept open: the write connection stays open as long as this, so SQLite never deletes it.
 */
export function walFileSync(databasePath: string): { sync: SyncWal; close: () => void } {
  let fd: number | undefined;
  return {
    sync(done) {
      if (fd === undefined) {
        try {
          fd = openSync(`${databasePath}-wal`, 'r');
        } catch (err) {
          // No WAL file: no commit ever wrote one, so nothing is waiting to be made durable.
          const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
          queueMicrotask(() => done(missing ? null : (err as Error)));
          return;
        }
      }
      fdatasync(fd, done);
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** An error shaped like node:sqlite's I/O error (SQLITE_IOERR_FSYNC), so the error handler answers 503. */
function notDurableError(cause: Error): Error {
  return Object.assign(new Error(`The write could not be made durable: ${cause.message}`), {
    code: 'ERR_SQLITE_ERROR',
    errcode: 1034,
    cause,
  });
}

/**
 * Acknowledges committed writes once a flush that started after their COMMIT has finished. One flush runs at a
 * time; the writes committed meanwhile wait for the next one, which covers them all. The WAL is written in commit
 * order, so a flush also covers every earlier commit: an acknowledged write never depends on one that could be lost.
 */
export class DurableAcks {
  readonly #sync: SyncWal;
  readonly #stats: WalSyncStats;
  #waiting: DurableWaiter[] = [];
  #running = false;
  readonly #idle: (() => void)[] = [];
  /** Called when a flush has settled and its writes are answered, before the next flush starts. */
  onSettled: (() => void) | undefined;

  constructor(sync: SyncWal, stats: WalSyncStats) {
    this.#sync = sync;
    this.#stats = stats;
  }

  /** Whether a flush is running. */
  get running(): boolean {
    return this.#running;
  }

  /** Answers these writes after a flush that starts after this call (at once if none runs). */
  add(waiters: DurableWaiter[]): void {
    this.#waiting.push(...waiters);
    if (!this.#running) this.#start();
  }

  /** Resolves once every write handed over so far has been answered. */
  idle(): Promise<void> {
    if (!this.#running && this.#waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #start(): void {
    const batch = this.#waiting;
    this.#waiting = [];
    this.#running = true;
    this.#sync((err) => {
      this.#running = false;
      if (err) {
        this.#stats.failedSyncs++;
        const e = notDurableError(err);
        for (const w of batch) w.reject(e);
      } else {
        this.#stats.syncs++;
        for (const w of batch) w.resolve();
      }
      this.onSettled?.();
      if (!this.#running && this.#waiting.length > 0) this.#start();
      else if (!this.#running) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }
}
