// Group commit on PostgreSQL (docs/reliability.md, "Group commit on PostgreSQL"): transactions that arrive while
// another runs share its server transaction, each in its own savepoint, and one COMMIT. Kysely's PostgresDriver
// still owns the pool and its connections; this driver decides which connection a transaction runs on.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** How transactions are grouped. */
export interface PgGroupCommitOptions {
  /** Groups open at once, each on its own pooled connection. */
  lanes: number;
  /**
   * Members after which a group commits although others wait. PostgreSQL keeps 64 subtransactions of a
   * transaction in shared memory; past that every other backend's snapshot looks them up on disk.
   */
  maxMembers: number;
  /** Age of a group (from its BEGIN) after which it commits although others wait: it holds its row locks. */
  maxDelayMs: number;
}

/** Defaults: measured in docs/benchmarks.md ("Group commit on PostgreSQL"). */
export const PG_GROUP_COMMIT_DEFAULTS: PgGroupCommitOptions = { lanes: 4, maxMembers: 32, maxDelayMs: 20 };

/** Counters since the pool was opened: how many transactions each COMMIT acknowledged. */
export interface PgGroupCommitStats {
  commits: number;
  committedMembers: number;
  failedGroups: number;
  failedMembers: number;
}

// Names come from this file only. Each member releases its predecessor's savepoint in the round trip that opens its
// own, so a member costs one round trip besides its statements, as BEGIN did, and the group one COMMIT.
const OPEN_GROUP = CompiledQuery.raw('begin; savepoint group_member');
const NEXT_MEMBER = CompiledQuery.raw('release savepoint group_member; savepoint group_member');
const UNDO_MEMBER = CompiledQuery.raw('rollback to savepoint group_member');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One connection's run of members: the member holding it, those queued, and the open group's members. */
class Lane {
  connection: DatabaseConnection | undefined;
  held = false;
  readonly queue: (() => void)[] = [];
  members: Waiter[] = [];
  openedAt = 0;

  /** Members holding or waiting for this lane. */
  get load(): number {
    return (this.held ? 1 : 0) + this.queue.length;
  }
}

/**
 * Runs transactions in groups: a transaction takes the least busy lane; the first member of a group opens it, the
 * members that queued meanwhile run one after another in savepoints, and when none waits (or a cap is reached) one
 * COMMIT makes them all durable. Each member is answered only after that COMMIT. A member that fails is undone to
 * its savepoint alone; a COMMIT that fails fails every member with its error.
 */
export class PgGroupCommitter {
  readonly #driver: Driver;
  readonly #options: PgGroupCommitOptions;
  readonly #lanes: Lane[];
  readonly stats: PgGroupCommitStats = { commits: 0, committedMembers: 0, failedGroups: 0, failedMembers: 0 };

  constructor(driver: Driver, options: PgGroupCommitOptions) {
    this.#driver = driver;
    this.#options = options;
    this.#lanes = Array.from({ length: Math.max(1, options.lanes) }, () => new Lane());
  }

  /** Starts a member: waits for the least busy lane, then opens its group or a savepoint in the open one. */
  async begin(): Promise<Lane> {
    let lane = this.#lanes[0] as Lane;
    for (const l of this.#lanes) if (l.load < lane.load) lane = l;
    if (lane.held) await new Promise<void>((resolve) => lane.queue.push(resolve));
    else lane.held = true;
    try {
      if (lane.connection) {
        await lane.connection.executeQuery(NEXT_MEMBER);
      } else {
        const connection = await this.#driver.acquireConnection();
        lane.connection = connection;
        lane.openedAt = performance.now();
        await connection.executeQuery(OPEN_GROUP);
      }
    } catch (err) {
      await this.#failGroup(lane, err);
      this.#handOff(lane);
      throw err;
    }
    return lane;
  }

  /** Runs a statement of the member holding `lane`. */
  execute<R>(lane: Lane, query: CompiledQuery): Promise<QueryResult<R>> {
    return (lane.connection as DatabaseConnection).executeQuery<R>(query);
  }

  /** Streams a statement of the member holding `lane`. */
  stream<R>(lane: Lane, query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return (lane.connection as DatabaseConnection).streamQuery<R>(query, chunkSize);
  }

  /** Ends a member that succeeded: it joins the group, which commits unless others wait; resolves once committed. */
  commit(lane: Lane): Promise<void> {
    const committed = new Promise<void>((resolve, reject) => lane.members.push({ resolve, reject }));
    void this.#endRun(lane);
    return committed;
  }

  /** Ends a member that failed: undoes its savepoint only (the whole group if that fails). */
  async rollback(lane: Lane): Promise<void> {
    try {
      await (lane.connection as DatabaseConnection).executeQuery(UNDO_MEMBER);
    } catch (err) {
      await this.#failGroup(lane, err);
    }
    await this.#endRun(lane);
  }

  /** After a member: commits the group unless others wait and it is under its caps, then passes the lane on. */
  async #endRun(lane: Lane): Promise<void> {
    if (
      lane.connection &&
      (lane.queue.length === 0 ||
        lane.members.length >= this.#options.maxMembers ||
        performance.now() - lane.openedAt >= this.#options.maxDelayMs)
    ) {
      await this.#commitGroup(lane);
    }
    this.#handOff(lane);
  }

  #handOff(lane: Lane): void {
    const next = lane.queue.shift();
    if (next) next();
    else lane.held = false;
  }

  async #commitGroup(lane: Lane): Promise<void> {
    const connection = lane.connection as DatabaseConnection;
    const members = lane.members;
    lane.connection = undefined;
    lane.members = [];
    if (members.length === 0) {
      // Every member of the group failed: nothing to keep.
      await this.#close(connection, ROLLBACK);
      return;
    }
    try {
      const { rows } = await connection.executeQuery<{ command?: string }>(COMMIT);
      // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK; each member was undone to its own
      // savepoint when it failed, so this means the server lost the transaction some other way.
      if (rows[0]?.command === 'ROLLBACK') throw new Error('the server rolled back the commit group');
    } catch (err) {
      this.stats.failedGroups++;
      this.stats.failedMembers += members.length;
      await this.#close(connection, ROLLBACK);
      // Each member fails with the server's error as it is: a deadlock or serialization failure runs every member
      // again (RetryingKysely), a lost connection is answered 503 (error-handler.ts).
      for (const m of members) m.reject(err);
      return;
    }
    await this.#driver.releaseConnection(connection);
    this.stats.commits++;
    this.stats.committedMembers += members.length;
    for (const m of members) m.resolve();
  }

  /** Rolls back the lane's open group: its members fail with `cause`. */
  async #failGroup(lane: Lane, cause: unknown): Promise<void> {
    const connection = lane.connection;
    const members = lane.members;
    lane.connection = undefined;
    lane.members = [];
    if (members.length > 0) {
      this.stats.failedGroups++;
      this.stats.failedMembers += members.length;
    }
    for (const m of members) m.reject(cause);
    if (connection) await this.#close(connection, ROLLBACK);
  }

  /** Ends whatever transaction the connection is in and returns it to the pool. */
  async #close(connection: DatabaseConnection, statement: CompiledQuery): Promise<void> {
    try {
      await connection.executeQuery(statement);
    } catch {
      // A broken connection: the pool drops it when it is released.
    }
    await this.#driver.releaseConnection(connection);
  }
}

/**
 * One use of the database: a transaction, which joins a group, or statements outside one, which run on a pooled
 * connection taken at the first of them (so `db.connection()` keeps one server session, and a transaction begun
 * on it stays on it, alone).
 */
class PgGroupSession implements DatabaseConnection {
  readonly #driver: Driver;
  readonly #committer: PgGroupCommitter;
  #own: DatabaseConnection | undefined;
  #lane: Lane | undefined;
  /** Whether a statement of this member failed and no savepoint of its own undid it since. */
  #failed = false;

  constructor(driver: Driver, committer: PgGroupCommitter) {
    this.#driver = driver;
    this.#committer = committer;
  }

  async #connection(): Promise<DatabaseConnection> {
    this.#own ??= await this.#driver.acquireConnection();
    return this.#own;
  }

  async begin(settings: TransactionSettings): Promise<void> {
    // A transaction with its own isolation or access mode, or on a session that already ran statements (migrations
    // under an advisory lock), runs alone on its own connection.
    if (this.#own || settings.isolationLevel || settings.accessMode) {
      await this.#driver.beginTransaction(await this.#connection(), settings);
      return;
    }
    this.#failed = false;
    this.#lane = await this.#committer.begin();
  }

  async commit(): Promise<void> {
    const lane = this.#lane;
    if (!lane) return this.#driver.commitTransaction(this.#own as DatabaseConnection);
    this.#lane = undefined;
    if (this.#failed) {
      // As PostgreSQL does with COMMIT after an error: the member is rolled back, and told so.
      await this.#committer.rollback(lane);
      throw new Error('the transaction was rolled back after an earlier error');
    }
    await this.#committer.commit(lane);
  }

  async rollback(): Promise<void> {
    const lane = this.#lane;
    if (!lane) {
      if (this.#own) await this.#driver.rollbackTransaction(this.#own);
      return;
    }
    this.#lane = undefined;
    await this.#committer.rollback(lane);
  }

  /** Clears the failure a savepoint of the member's own undid. */
  undidToSavepoint(): void {
    this.#failed = false;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const lane = this.#lane;
    if (!lane) return (await this.#connection()).executeQuery<R>(query);
    try {
      return await this.#committer.execute<R>(lane, query);
    } catch (err) {
      this.#failed = true;
      throw err;
    }
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    const lane = this.#lane;
    if (lane) yield* this.#committer.stream<R>(lane, query, chunkSize);
    else yield* (await this.#connection()).streamQuery<R>(query, chunkSize);
  }

  /** Returns the session's own connection, if it took one. */
  async release(): Promise<void> {
    const own = this.#own;
    this.#own = undefined;
    if (own) await this.#driver.releaseConnection(own);
  }
}

/** Kysely's PostgreSQL driver with transactions grouped by a PgGroupCommitter. */
class PgGroupCommitDriver implements Driver {
  readonly #inner: PostgresDriver;
  readonly committer: PgGroupCommitter;

  constructor(inner: PostgresDriver, options: PgGroupCommitOptions) {
    this.#inner = inner;
    this.committer = new PgGroupCommitter(inner, options);
  }

  init(): Promise<void> {
    return this.#inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new PgGroupSession(this.#inner, this.committer);
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return (connection as PgGroupSession).begin(settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PgGroupSession).commit();
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PgGroupSession).rollback();
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdentifier(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${quoteIdentifier(name)}`));
    (connection as PgGroupSession).undidToSavepoint();
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${quoteIdentifier(name)}`));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return (connection as PgGroupSession).release();
  }

  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

/** A savepoint name as an SQL identifier (names come from code, never from requests). */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** PostgresDialect whose transactions are group-committed (see PgGroupCommitter). */
export class PgGroupCommitDialect extends PostgresDialect {
  readonly #config: PostgresDialectConfig;
  readonly #options: PgGroupCommitOptions;
  #driver: PgGroupCommitDriver | undefined;

  constructor(config: PostgresDialectConfig, options: PgGroupCommitOptions) {
    super(config);
    this.#config = config;
    this.#options = options;
  }

  override createDriver(): Driver {
    this.#driver = new PgGroupCommitDriver(new PostgresDriver(this.#config), this.#options);
    return this.#driver;
  }

  /** The committer's counters, once Kysely has created the driver. */
  groupCommitStats(): Readonly<PgGroupCommitStats> | undefined {
    return this.#driver?.committer.stats;
  }
}
