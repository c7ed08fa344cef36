// Durable acknowledgements for the group committer (docs/reliability.md, "Group commit"): under synchronous=FULL
// the write connection commits without SQLite's own flush (synchronous=NORMAL), and the WAL is flushed here, off
// the event loop, before any write of the commit is acknowledged.
import { closeSync, fdatasync, openSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';

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
  /** Flushes that failed. */
  failedSyncs: number;
}

/**
 * The WAL file of a database file, absolute now (the same file whatever the process's directory is later). SQLite
 * follows a symbolic link to the database and keeps the WAL beside its target: the link's own name would name no
 * file, and every flush would find "no WAL yet" and make nothing durable.
 */
function walPathOf(databasePath: string): string {
  let target: string;
  try {
    target = realpathSync(databasePath);
  } catch {
    target = resolve(databasePath); // not created yet
  }
  return `${target}-wal`;
}

/** Flushes the database's WAL file with fdatasync on libuv's thread pool (password.ts leaves it threads free). */
export function walFileSync(databasePath: string): { sync: SyncWal; close: () => Promise<void> } {
  const walPath = walPathOf(databasePath);
  let fd: number | undefined;
  let closed = false;
  return {
    sync(done) {
      if (closed) {
        queueMicrotask(() => done(new Error('the database is closed')));
        return;
      }
      if (fd === undefined) {
        try {
          // Kept open: SQLite never deletes the WAL while the write connection is open, and it locks the database
          // and -shm files, never this one, so this descriptor holds or releases no lock of SQLite's.
          fd = openSync(walPath, 'r');
        } catch (err) {
          // No WAL file yet: no commit has written a frame since the database was created; nothing to make durable.
          const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
          queueMicrotask(() => done(missing ? null : (err as Error)));
          return;
        }
      }
      fdatasync(fd, done);
    },
    async close() {
      closed = true;
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** An error shaped like node:sqlite's SQLITE_IOERR_FSYNC, so the error handler answers 503 unavailable. */
function notDurableError(cause: Error): Error {
  return Object.assign(new Error(`The write could not be made durable: ${cause.message}`), {
    code: 'ERR_SQLITE_ERROR',
    errcode: 1034,
    cause,
  });
}

/** Acknowledges committed writes once a flush that started after their COMMIT has finished. */
export class DurableAcks {
  readonly #sync: SyncWal;
  readonly #stats: WalSyncStats;
  readonly #onSettled: () => void;
  #waiting: DurableWaiter[] = [];
  #running = false;
  #failure: Error | undefined;
  readonly #idle: (() => void)[] = [];

  /**
   * `onSettled` runs when a flush has settled and its writes are answered, before the next flush starts. One flush
   * runs at a time; the writes committed meanwhile wait for the next one, which covers them all (the WAL is written
   * in commit order, so a flush also covers every earlier commit).
   */
  constructor(sync: SyncWal, stats: WalSyncStats, onSettled: () => void) {
    this.#sync = sync;
    this.#stats = stats;
    this.#onSettled = onSettled;
  }

  /** Whether a flush is running. */
  get running(): boolean {
    return this.#running;
  }

  /**
   * The error of a failed flush, after which no write may be acknowledged again: the kernel may have dropped the
   * pages it could not write, and a later flush that succeeds would not bring them back (PostgreSQL stops too).
   */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Answers these writes after a flush that starts after this call (at once if none runs). */
  add(waiters: DurableWaiter[]): void {
    if (this.#failure) {
      for (const w of waiters) w.reject(this.#failure);
      return;
    }
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
        this.#failure = notDurableError(err);
        // The writes committed while it ran cannot be promised either.
        for (const w of batch.concat(this.#waiting.splice(0))) w.reject(this.#failure);
      } else {
        this.#stats.syncs++;
        for (const w of batch) w.resolve();
      }
      this.#onSettled();
      if (!this.#running && this.#waiting.length > 0) this.#start();
      else if (!this.#running) for (const done of this.#idle.splice(0)) done();
    });
  }
}
