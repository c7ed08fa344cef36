// Group commit over the one SQLite write connection (docs/reliability.md, "Group commit"): the GroupCommitter and
// the Kysely driver, sessions and adapter that hand transactions to it. The connection itself is sqlite-driver.ts.
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  type DatabaseConnection,
  DeleteQueryNode,
  type Driver,
  InsertQueryNode,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  type SqliteDatabase,
  UpdateQueryNode,
} from 'kysely';
import type { CheckpointResponse } from './checkpoint-worker.ts';
import type { NodeSqliteDatabase } from './sqlite-driver.ts';
import { DurableAcks, type DurableWaiter, type SyncWal, walFileSync } from './wal-sync.ts';
import { releaseHeapFlagsForWorkers } from './worker-heap.ts';

/** Runs one compiled query on a connection the way Kysely's own SQLite driver does. */
function runCompiled<R>(database: SqliteDatabase, query: CompiledQuery): QueryResult<R> {
  const stmt = database.prepare(query.sql);
  if (stmt.reader) return { rows: stmt.all(query.parameters) as R[] };
  const { changes, lastInsertRowid } = stmt.run(query.parameters);
  return {
    insertId: lastInsertRowid != null ? BigInt(lastInsertRowid) : undefined,
    numAffectedRows: changes != null ? BigInt(changes) : undefined,
    rows: [],
  };
}

const SQLITE_BUSY = 5;

/** When a group of transactions commits: whichever limit is reached first. */
export interface GroupCommitOptions {
  /** Members after which the group commits at once. */
  maxMembers: number;
  /** Age of the group (from its first member) after which the next member to finish commits it. */
  maxDelayMs: number;
  /**
   * Longest run of members in one turn of the event loop (undefined: no limit). Members waiting for the connection
   * resume as microtasks, so under a burst of writes one turn would run them all back to back (300 ms of 50
   * connections' posts, during which no other request is served); past this many ms the open group commits and the
   * next member starts on the next turn.
   */
  maxTurnMs?: number;
  /** Checkpoint the WAL on a worker thread, at most this often (undefined or 0: the write connection does). */
  checkpointIntervalMs?: number;
  /** With the worker: WAL pages after which the write connection checkpoints itself (default 4000). */
  backstopCheckpointPages?: number;
  /**
   * With synchronous=FULL on a file: flush the WAL after COMMIT on the thread pool rather than inside COMMIT on the
   * event loop (default true); members are acknowledged only once the flush is done (wal-sync.ts).
   */
  syncOffLoop?: boolean;
  /** The flush used by syncOffLoop (default: fdatasync of the WAL file); tests give one they control. */
  syncWal?: SyncWal;
}

/**
 * Defaults. A group normally commits at the end of the event loop's turn, so a lone write waits for nobody; the caps
 * only bound a long turn under load: 64 members, or 50 ms from the first member (a shorter cap splits one turn's
 * writes into several fsyncs, which under load costs more than it saves: see docs/reliability.md).
 */
export const GROUP_COMMIT_DEFAULTS: GroupCommitOptions = {
  maxMembers: 64,
  maxDelayMs: 50,
  maxTurnMs: 10,
  checkpointIntervalMs: 100,
  backstopCheckpointPages: 4000,
  syncOffLoop: true,
};

type Member = DurableWaiter;

interface Group {
  members: Member[];
  openedAt: number;
}

/** Counters of the group committer since the database was opened. */
export interface GroupCommitStats {
  /** Groups committed. */
  commits: number;
  /** Transactions acknowledged by those commits. */
  committedMembers: number;
  /** Groups lost (a failed COMMIT, or SQLite rolled the whole transaction back). */
  failedGroups: number;
  /** Transactions failed with a lost group. */
  failedMembers: number;
  /** Checkpoints the worker thread finished, and what the last one found: WAL frames, frames copied. */
  checkpoints: number;
  lastCheckpoint: { log: number; checkpointed: number } | undefined;
  /** WAL flushes after COMMIT (syncOffLoop) that succeeded, and that failed (their members got the error). */
  syncs: number;
  failedSyncs: number;
}

/** An error shaped like node:sqlite's I/O error, so the error handler answers 503 unavailable as for the cause. */
function groupLostError(cause: unknown): Error {
  const e = cause as { message?: string; errcode?: unknown } | null | undefined;
  return Object.assign(
    new Error(`The write was rolled back with the commit group it joined: ${e?.message ?? String(cause)}`),
    // SQLITE_IOERR unless the cause already is one of the codes that mean "storage unavailable".
    {
      code: 'ERR_SQLITE_ERROR',
      errcode: [5, 6, 10, 13, 14].includes(Number(e?.errcode) & 0xff) ? Number(e?.errcode) : 10,
      cause,
    },
  );
}

/**
 * Checkpoints the WAL on a worker thread (checkpoint-worker.ts): copying committed pages into the database file
 * and fsyncing it is the other big stall of a busy writer besides the COMMIT fsync. Asked after commits, at most
 * one checkpoint at a time and one per `intervalMs`. The write connection keeps a (higher) autocheckpoint of its
 * own as a backstop: while writes keep coming a passive checkpoint rarely catches the WAL's very end, and only a
 * checkpoint that does lets the WAL start over.
 */
class Checkpointer {
  readonly #path: string;
  readonly #intervalMs: number;
  readonly #stats: GroupCommitStats;
  #worker: Worker | undefined;
  #running = false;
  #closed = false;
  #lastStart = Number.NEGATIVE_INFINITY;

  constructor(path: string, intervalMs: number, stats: GroupCommitStats) {
    this.#path = path;
    this.#intervalMs = intervalMs;
    this.#stats = stats;
  }

  /** Called after a COMMIT: starts a checkpoint unless one runs or one started less than `intervalMs` ago. */
  afterCommit(): void {
    if (this.#running || this.#closed) return;
    const now = performance.now();
    if (now - this.#lastStart < this.#intervalMs) return;
    this.#lastStart = now;
    this.#running = true;
    const worker = this.#worker ?? this.#spawn();
    // A running checkpoint keeps the process alive; an idle worker does not.
    worker.ref();
    worker.postMessage('checkpoint');
  }

  #spawn(): Worker {
    releaseHeapFlagsForWorkers();
    const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), {
      workerData: { path: this.#path },
      // Its own V8 isolate, which only ever runs one PRAGMA: the smallest heap limits (docs/deployment.md, "Memory").
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    worker.unref();
    worker.on('message', (done: CheckpointResponse) => {
      this.#running = false;
      worker.unref();
      if (done.error) return;
      this.#stats.checkpoints++;
      this.#stats.lastCheckpoint = { log: done.log, checkpointed: done.checkpointed };
    });
    const lost = () => {
      // A checkpointer that died is started again on a later commit; the backstop covers the meantime.
      if (this.#worker === worker) this.#worker = undefined;
      this.#running = false;
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.#worker = worker;
    return worker;
  }

  /** Stops the worker (after a checkpoint in progress, which is never cut short). */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref();
    worker.postMessage('close');
    // A worker that does not stop within a second (it should take microseconds) is stopped by force.
    const timer = setTimeout(() => void worker.terminate(), 1000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * Group commit over the one write connection. node:sqlite is synchronous, and a COMMIT that flushes the WAL waits
 * for the disk, so one commit per write caps throughput at one flush per write. Here the transactions that take the
 * write connection one after the other run inside one outer transaction, each in its own SAVEPOINT: a member that
 * fails rolls back to its savepoint only and its caller gets its error; a member that succeeds releases its
 * savepoint and waits. The outer transaction commits when the event loop has no more work for this turn
 * (setImmediate), at once after `maxMembers` members or `maxDelayMs`, or when members have held the connection for
 * `maxTurnMs` in a row (the next one then starts on the next turn). Under synchronous=FULL the WAL is then flushed
 * off the event loop (wal-sync.ts), and while a flush runs the open group waits for it to end before committing;
 * each member's commit resolves only once its COMMIT is durable. A failed COMMIT, or an error after which SQLite
 * rolled back the outer transaction itself (I/O error, disk full), fails every member.
 *
 * Queries outside transactions: a SELECT runs on a second connection that sees committed data only, so an open
 * group stays invisible until it commits (and is answered once durable: readable for the length of a flush or two
 * before that); any other statement commits the open group first and then runs alone.
 */
export class GroupCommitter {
  readonly #writer: NodeSqliteDatabase;
  readonly #reader: NodeSqliteDatabase;
  readonly #options: GroupCommitOptions;
  /** The write connection's owner: a member between SAVEPOINT and RELEASE, or a statement outside transactions. */
  #held = false;
  readonly #waiters: (() => void)[] = [];
  #group: Group | undefined;
  /** Set when the end-of-turn commit found the connection held: the holder commits the group on release. */
  #commitOnRelease = false;
  /** When the current run of members on the connection began (maxTurnMs). */
  #runStartedAt = 0;
  readonly stats: GroupCommitStats = {
    commits: 0,
    committedMembers: 0,
    failedGroups: 0,
    failedMembers: 0,
    checkpoints: 0,
    lastCheckpoint: undefined,
    syncs: 0,
    failedSyncs: 0,
  };
  readonly #checkpointer: Checkpointer | undefined;
  /** Acknowledges committed groups after the WAL flush (synchronous=FULL, syncOffLoop). */
  readonly #durable: DurableAcks | undefined;
  readonly #closeWal: (() => Promise<void>) | undefined;
  #closed = false;
  /** A group whose end-of-turn commit waits for the running flush to end (see #commitAtEndOfTurn). */
  #heldBack: Group | undefined;

  constructor(writer: NodeSqliteDatabase, reader: NodeSqliteDatabase, options: GroupCommitOptions) {
    this.#writer = writer;
    this.#reader = reader;
    this.#options = options;
    // Each member's savepoint journals the pages it changes; kept in memory, not in a temporary file.
    writer.raw.exec('PRAGMA temp_store = MEMORY');
    if (options.checkpointIntervalMs && writer.path !== undefined) {
      this.#checkpointer = new Checkpointer(writer.path, options.checkpointIntervalMs, this.stats);
      writer.raw.exec(`PRAGMA wal_autocheckpoint = ${options.backstopCheckpointPages ?? 4000}`);
    }
    if (
      writer.synchronous === 'FULL' &&
      writer.path !== undefined &&
      options.syncOffLoop !== false &&
      (writer.raw.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode === 'wal'
    ) {
      // SQLite's FULL flushes the WAL inside COMMIT, on this thread: 40% of the event loop under 50 connections of
      // posts. NORMAL leaves the flush out of COMMIT (checkpoints still flush the WAL first); it is done here, off
      // the event loop, before anyone hears of the commit. Acknowledged writes survive power loss as under FULL.
      const flusher = options.syncWal
        ? { sync: options.syncWal, close: async () => {} }
        : walFileSync(writer.path);
      writer.raw.exec('PRAGMA synchronous = NORMAL');
      this.#durable = new DurableAcks(flusher.sync, this.stats, () => this.#commitHeldBack());
      this.#closeWal = flusher.close;
    }
  }

  /** Runs a query of a member on the write connection (the caller owns it). */
  write<R>(query: CompiledQuery): QueryResult<R> {
    // After SQLite rolled the group back itself, a statement would run in autocommit mode, outside any
    // transaction, and be committed alone: refuse it (only code that swallowed the error can get here).
    if (!this.#writer.raw.isTransaction) {
      throw groupLostError(new Error('the transaction was rolled back by SQLite after an earlier error'));
    }
    return runCompiled<R>(this.#writer, query);
  }

  /** Runs a SELECT outside transactions on the committed-data connection. */
  read<R>(query: CompiledQuery): QueryResult<R> {
    return runCompiled<R>(this.#reader, query);
  }

  /** Streams a SELECT from the write connection (inside a member) or the committed-data one. */
  *iterate(query: CompiledQuery, onWriter: boolean): IterableIterator<unknown> {
    yield* (onWriter ? this.#writer : this.#reader).prepare(query.sql).iterate(query.parameters);
  }

  #acquire(): Promise<void> | undefined {
    if (!this.#held) {
      this.#held = true;
      this.#runStartedAt = performance.now();
      return undefined;
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #release(): void {
    if (this.#commitOnRelease) this.#commitGroup();
    const next = this.#waiters.shift();
    if (!next) {
      this.#held = false;
      return;
    }
    const maxTurnMs = this.#options.maxTurnMs;
    if (maxTurnMs === undefined || performance.now() - this.#runStartedAt < maxTurnMs) {
      next();
      return;
    }
    // The connection stays held for `next` while other requests get their turn.
    if (this.#group) this.#commitGroup();
    setImmediate(() => {
      this.#runStartedAt = performance.now();
      next();
    });
  }

  /** Starts a member: takes the write connection, opens the group if none is open, and a savepoint. */
  async begin(): Promise<void> {
    this.#refuseIfStopped();
    await this.#acquire();
    try {
      if (!this.#group) {
        // BEGIN IMMEDIATE: wait for another process's write lock instead of failing on upgrade.
        await this.#beginImmediate();
        // The group's documents are indexed once, before its COMMIT, not one FTS5 segment per member.
        this.#writer.deferSearchIndex();
        const group: Group = { members: [], openedAt: performance.now() };
        this.#group = group;
        setImmediate(() => this.#commitAtEndOfTurn(group));
      }
      this.#writer.raw.exec('SAVEPOINT group_member');
    } catch (err) {
      this.#release();
      throw err;
    }
  }

  /**
   * BEGIN IMMEDIATE, waiting for another process's write lock (WORKERS > 1) on timers: SQLite's own busy handler
   * sleeps on this thread, and with two API processes writing it held each one's event loop for up to the busy
   * timeout (event-loop delay p99 658 ms under 50 connections of posts). The connection's busy timeout is 0 only
   * for this statement; the wait is bounded by the same timeout, then fails with SQLITE_BUSY (503) as before.
   */
  async #beginImmediate(): Promise<void> {
    const raw = this.#writer.raw;
    const deadline = performance.now() + this.#writer.busyTimeoutMs;
    let pause = 1;
    for (;;) {
      raw.exec('PRAGMA busy_timeout = 0');
      try {
        raw.exec('BEGIN IMMEDIATE');
        return;
      } catch (err) {
        if ((Number((err as { errcode?: unknown }).errcode) & 0xff) !== SQLITE_BUSY) throw err;
        if (performance.now() >= deadline) throw err;
      } finally {
        raw.exec(`PRAGMA busy_timeout = ${this.#writer.busyTimeoutMs}`);
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 16);
    }
  }

  /** Ends a member that succeeded: folds its savepoint into the group and resolves once the group committed. */
  commit(): Promise<void> {
    const group = this.#group;
    if (!group) throw new Error('commit of a transaction that is not open');
    this.#writer.raw.exec('RELEASE group_member');
    const committed = new Promise<void>((resolve, reject) => group.members.push({ resolve, reject }));
    if (
      group.members.length >= this.#options.maxMembers ||
      performance.now() - group.openedAt >= this.#options.maxDelayMs
    ) {
      this.#commitGroup();
    }
    this.#release();
    return committed;
  }

  /**
   * Ends a member that failed: undoes its savepoint only. When SQLite already rolled back the whole transaction
   * (it does so after some I/O and disk-full errors), every member of the group is lost and fails with `cause`.
   */
  rollback(cause: unknown): void {
    try {
      if (this.#writer.raw.isTransaction) {
        try {
          this.#writer.raw.exec('ROLLBACK TO group_member; RELEASE group_member');
          return;
        } catch (err) {
          this.#failGroup(err);
          return;
        }
      }
      this.#failGroup(cause);
    } finally {
      this.#release();
    }
  }

  /**
   * Runs a statement outside transactions: alone on the write connection, after the open group committed; answered
   * once durable like a member.
   */
  async writeAlone<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.#refuseIfStopped();
    await this.#acquire();
    let result: QueryResult<R>;
    try {
      if (this.#group) this.#commitGroup();
      if (isRowWrite(query)) {
        // In a transaction of its own begun on timers, as a group's is: in autocommit, a row write meeting another
        // process's write lock (WORKERS > 1) waited in SQLite's busy handler, asleep on this thread with every
        // request. Other statements (pragmas, a checkpoint) cannot all run inside a transaction and stay as they were.
        await this.#beginImmediate();
        const raw = this.#writer.raw;
        try {
          result = runCompiled<R>(this.#writer, query);
          raw.exec('COMMIT');
        } catch (err) {
          if (raw.isTransaction) raw.exec('ROLLBACK');
          throw err;
        }
      } else {
        result = runCompiled<R>(this.#writer, query);
      }
    } finally {
      this.#release();
    }
    const durable = this.#durable;
    if (durable) await new Promise<void>((resolve, reject) => durable.add([{ resolve, reject }]));
    return result;
  }

  /** Refuses a write, before it touches anything, once the database is closing or a flush has failed. */
  #refuseIfStopped(): void {
    if (this.#closed) throw groupLostError(new Error('the database is closed'));
    if (this.#durable?.failure) throw this.#durable.failure;
  }

  #commitAtEndOfTurn(group: Group): void {
    if (this.#group !== group) return;
    // While a flush runs, members of later turns join the open group and it commits when the flush ends: they would
    // wait for that flush anyway, and one COMMIT writes each page they share once (alternating runs of 10 s of
    // `POST /posts`: 594-883/s against 544-865 committing at every turn's end; docs/reliability.md).
    if (this.#durable?.running) {
      this.#heldBack = group;
      return;
    }
    if (this.#held) this.#commitOnRelease = true;
    else this.#commitGroup();
  }

  #commitHeldBack(): void {
    const group = this.#heldBack;
    this.#heldBack = undefined;
    if (group) this.#commitAtEndOfTurn(group);
  }

  #commitGroup(): void {
    const group = this.#group;
    this.#commitOnRelease = false;
    if (!group) return;
    // After a failed flush nothing more may be promised: the group is undone rather than committed unanswerable.
    const failure = this.#durable?.failure;
    if (failure) {
      this.#failGroup(failure);
      return;
    }
    this.#group = undefined;
    try {
      this.#writer.flushSearchIndex();
      this.#writer.raw.exec('COMMIT');
    } catch (err) {
      this.#abandon();
      this.stats.failedGroups++;
      this.stats.failedMembers += group.members.length;
      for (const m of group.members) m.reject(err);
      return;
    }
    this.stats.commits++;
    this.stats.committedMembers += group.members.length;
    if (this.#durable) this.#durable.add(group.members);
    else for (const m of group.members) m.resolve();
    this.#checkpointer?.afterCommit();
  }

  #failGroup(cause: unknown): void {
    const group = this.#group;
    this.#group = undefined;
    this.#commitOnRelease = false;
    this.#abandon();
    if (!group) return;
    this.stats.failedGroups++;
    this.stats.failedMembers += group.members.length;
    const err = groupLostError(cause);
    for (const m of group.members) m.reject(err);
  }

  /** Rolls back what is left of the outer transaction, if SQLite has not done so already. */
  #abandon(): void {
    this.#writer.dropDeferredSearch();
    if (!this.#writer.raw.isTransaction) return;
    try {
      this.#writer.raw.exec('ROLLBACK');
    } catch {
      // Nothing more to undo: the connection is out of its transaction either way.
    }
  }

  /** Commits an open group (its waiting members are acknowledged) and closes both connections. */
  async close(): Promise<void> {
    this.#closed = true;
    // The checkpointer's connection goes first, so the write connection closes last and can remove the WAL.
    await this.#checkpointer?.close();
    // A member still running when the database is destroyed cannot finish: its group is lost with it.
    if (this.#held) this.#failGroup(new Error('the database was closed while a write was running'));
    else this.#commitGroup();
    // The last commits are answered once durable, before their connection goes.
    await this.#durable?.idle();
    await this.#closeWal?.();
    this.#reader.close();
    this.#writer.close();
  }
}

// Raw SQL that reads (e.g. `select total_changes(), data_version`) may use the committed-data connection too; it is
// read-only, so a statement sent there by mistake fails loudly instead of writing outside the group.
const RAW_READ = /^\s*select\b/i;

/** Whether a statement is an insert, update or delete built with Kysely (not raw SQL). */
function isRowWrite(query: CompiledQuery): boolean {
  return (
    InsertQueryNode.is(query.query) || UpdateQueryNode.is(query.query) || DeleteQueryNode.is(query.query)
  );
}

/** Whether a query outside transactions is a read: a query-builder SELECT, or raw SQL that starts with SELECT. */
function isRead(query: CompiledQuery): boolean {
  return SelectQueryNode.is(query.query) || (query.query.kind === 'RawNode' && RAW_READ.test(query.sql));
}

/** One use of the group-committed database: a transaction, or queries outside one. */
class GroupSession implements DatabaseConnection {
  readonly #committer: GroupCommitter;
  #inTransaction = false;
  /** The last error a statement of this transaction threw: the cause reported if it cost the whole group. */
  #lastError: unknown;

  constructor(committer: GroupCommitter) {
    this.#committer = committer;
  }

  async begin(): Promise<void> {
    await this.#committer.begin();
    this.#inTransaction = true;
  }

  async commit(): Promise<void> {
    // Once RELEASE ran, the transaction is the group's: a later rollback call (Kysely makes one when the group's
    // COMMIT failed) has nothing left to undo.
    const committed = this.#committer.commit();
    this.#inTransaction = false;
    await committed;
  }

  async rollback(): Promise<void> {
    if (!this.#inTransaction) return;
    this.#inTransaction = false;
    this.#committer.rollback(this.#lastError);
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#inTransaction) {
      try {
        return this.#committer.write<R>(query);
      } catch (err) {
        this.#lastError = err;
        throw err;
      }
    }
    if (isRead(query)) return this.#committer.read<R>(query);
    return this.#committer.writeAlone<R>(query);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) {
      throw new Error('Sqlite driver only supports streaming of select queries');
    }
    for (const row of this.#committer.iterate(query, this.#inTransaction)) yield { rows: [row as R] };
  }
}

/** A savepoint name as an SQL identifier (names come from code, never from requests). */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Driver that hands out sessions over the group committer (see GroupCommitter). */
export class GroupCommitDriver implements Driver {
  readonly #committer: GroupCommitter;

  constructor(committer: GroupCommitter) {
    this.#committer = committer;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new GroupSession(this.#committer);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as GroupSession).begin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as GroupSession).commit();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as GroupSession).rollback();
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdentifier(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteIdentifier(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteIdentifier(name)}`));
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    await this.#committer.close();
  }
}

/** Kysely's SQLite adapter, but several sessions may be out at once: the group committer serializes writes. */
export class GroupCommitAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }

  // SQLite's DDL is transactional; saying so makes Kysely's migrator run the pending migrations in one transaction
  // (see TransactionalDdlSqliteAdapter).
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}
