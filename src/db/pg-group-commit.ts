// Group commit on PostgreSQL (docs/reliability.md, "Group commit on PostgreSQL"): transactions that arrive while
// another runs share its server transaction, each in its own savepoint, and one COMMIT. Kysely's PostgresDriver
// still owns the pool and its connections; this driver decides which connection a transaction runs on.
import {
  AbortedTransactionError,
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import {
  type AheadStatement,
  discardPipeline,
  failedAhead,
  isDeferred,
  pipelinedText,
  prefixedText,
  prefixMark,
  sentValues,
} from './prepared-statements.ts';

/** Kysely's options of a driver call that can be aborted (not exported by name). */
type AbortableOperationOptions = Parameters<Driver['init']>[0];

/** How transactions are grouped. */
export interface PgGroupCommitOptions {
  /** Groups open at once, each on its own pooled connection. */
  lanes: number;
  /**
   * Members after which a group commits although others wait. PostgreSQL keeps 64 subtransactions of a
   * transaction in shared memory; past that every other backend's snapshot looks them up on disk.
   */
  maxMembers: number;
  /** Age of a group (from its BEGIN) after which it commits at its next member's end although others wait. */
  maxDelayMs: number;
  /**
   * Longest wait of a member for a row lock. A group holds every member's locks until its COMMIT, so two groups
   * can each hold what the other's running member wants; PostgreSQL would find that deadlock only after its
   * deadlock_timeout (1 s by default). The member that waits this long fails with 55P03, is undone to its
   * savepoint, and runs again alone (RetryingKysely), without a lock timeout.
   */
  lockTimeoutMs: number;
}

/** Defaults: measured in docs/benchmarks.md ("Targets of issue 8, twenty-fourth session"). */
export const PG_GROUP_COMMIT_DEFAULTS: PgGroupCommitOptions = {
  lanes: 4,
  maxMembers: 32,
  maxDelayMs: 20,
  lockTimeoutMs: 200,
};

/** Counters since the pool was opened: how many transactions each COMMIT acknowledged. */
export interface PgGroupCommitStats {
  commits: number;
  committedMembers: number;
  failedGroups: number;
  failedMembers: number;
}

// Names come from this file only. Each member releases its predecessor's savepoint and opens its own in the round
// trip of its first statement (prefixMark), as the group's first member opens the group: a member costs no round
// trip besides its statements, and the group one COMMIT.
const NEXT_MEMBER = ahead(['release savepoint group_member', 'savepoint group_member']);
const UNDO_MEMBER = CompiledQuery.raw('rollback to savepoint group_member');
const COMMIT = CompiledQuery.raw('commit');

/** Statements that go ahead of a member's first statement, and the mark that sends them in its round trip. */
interface Ahead {
  statements: readonly string[];
  mark: string;
}

function ahead(statements: readonly string[]): Ahead {
  return { statements, mark: prefixMark(statements) };
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One connection's run of members: the member holding it, those queued, and the open group's members. */
class Lane {
  /** Held from a group's first member until a COMMIT finds nobody waiting. */
  connection: DatabaseConnection | undefined;
  /** Whether a group is open on the connection (its BEGIN may still be pending). */
  open = false;
  /**
   * What goes ahead of the next statement on the connection: the group's BEGIN and first savepoint, or the next
   * member's savepoint. Left pending by a member that ran no statement, so such a member has nothing to undo.
   */
  pending: Ahead | undefined;
  /**
   * The error of the running member's first statement when what went ahead of it may not have run: its savepoint
   * may be missing, so undoing to `group_member` could undo its predecessor instead. The group is rolled back.
   */
  aheadFailed: unknown;
  /**
   * The running member's deferred writes (DEFERRED_MARK) not sent yet: they go ahead of its next statement, or at its
   * end in a round trip of their own, so a post's insert travels with the write after it.
   */
  deferred: AheadStatement[] = [];
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
  readonly #openGroup: Ahead;
  readonly stats: PgGroupCommitStats = { commits: 0, committedMembers: 0, failedGroups: 0, failedMembers: 0 };

  constructor(driver: Driver, options: PgGroupCommitOptions) {
    this.#driver = driver;
    this.#options = options;
    this.#lanes = Array.from({ length: Math.max(1, options.lanes) }, () => new Lane());
    const lockTimeout = Math.max(0, Math.trunc(options.lockTimeoutMs));
    this.#openGroup = ahead(['begin', `set local lock_timeout = ${lockTimeout}`, 'savepoint group_member']);
  }

  /**
   * Starts a member: waits for the least busy lane, then opens its group or its savepoint in the open one, both
   * sent with its first statement.
   */
  async begin(): Promise<Lane> {
    let lane = this.#lanes[0] as Lane;
    for (const l of this.#lanes) if (l.load < lane.load) lane = l;
    if (lane.held) await new Promise<void>((resolve) => lane.queue.push(resolve));
    else lane.held = true;
    if (lane.open) {
      lane.pending ??= NEXT_MEMBER;
      return lane;
    }
    try {
      lane.connection ??= await this.#driver.acquireConnection();
    } catch (err) {
      this.#handOff(lane);
      throw err;
    }
    lane.openedAt = performance.now();
    lane.open = true;
    lane.pending = this.#openGroup;
    return lane;
  }

  /**
   * Runs a statement of the member holding `lane`, behind what is pending on its connection. A deferred write
   * (DEFERRED_MARK) is only queued: it answers at once with no rows and goes ahead of the member's next statement.
   */
  execute<R>(lane: Lane, query: CompiledQuery): Promise<QueryResult<R>> {
    if (isDeferred(query.sql)) {
      try {
        lane.deferred.push({ sql: query.sql, values: sentValues(query.parameters) });
      } catch (err) {
        return Promise.reject(err);
      }
      return Promise.resolve({ rows: [] });
    }
    return this.#send<R>(lane, query);
  }

  /**
   * Sends the member's deferred writes, if any, in one round trip: the last one behind the others. Writes deferred
   * while one is in flight (not awaited by the member) go in the next.
   */
  async flush(lane: Lane): Promise<void> {
    for (let last = lane.deferred.pop(); last !== undefined; last = lane.deferred.pop()) {
      await this.#send(lane, CompiledQuery.raw(last.sql, [...last.values]));
    }
  }

  /** Forgets the member's deferred writes: a rollback to any of its savepoints undoes them (all came after it). */
  dropDeferred(lane: Lane): void {
    lane.deferred = [];
  }

  #send<R>(lane: Lane, query: CompiledQuery): Promise<QueryResult<R>> {
    const pending = lane.pending;
    const deferred = lane.deferred;
    lane.pending = undefined;
    const connection = lane.connection as DatabaseConnection;
    if (pending === undefined && deferred.length === 0) return connection.executeQuery<R>(query);
    lane.deferred = [];
    const sql =
      deferred.length === 0
        ? prefixedText((pending as Ahead).mark, query.sql)
        : pipelinedText(pending?.statements, deferred, query.sql);
    return connection.executeQuery<R>({ ...query, sql }).catch((err: unknown) => {
      discardPipeline(sql);
      if (failedAhead(err)) lane.aheadFailed = err;
      throw err;
    });
  }

  /** Streams a statement of the member holding `lane`, after what is pending on its connection. */
  async *stream<R>(
    lane: Lane,
    query: CompiledQuery,
    chunkSize: number,
  ): AsyncIterableIterator<QueryResult<R>> {
    await this.flush(lane);
    const pending = lane.pending;
    lane.pending = undefined;
    const connection = lane.connection as DatabaseConnection;
    if (pending !== undefined) {
      try {
        await connection.executeQuery(CompiledQuery.raw(pending.statements.join('; ')));
      } catch (err) {
        lane.aheadFailed = err;
        throw err;
      }
    }
    yield* connection.streamQuery<R>(query, chunkSize);
  }

  /** Ends a member that succeeded: it joins the group, which commits unless others wait; resolves once committed. */
  commit(lane: Lane): Promise<void> {
    const committed = new Promise<void>((resolve, reject) => lane.members.push({ resolve, reject }));
    void this.#endRun(lane);
    return committed;
  }

  /**
   * Ends a member that failed: undoes its savepoint only (the whole group if that fails, or if its savepoint may be
   * missing). A member whose savepoint is still pending ran no statement: it has nothing to undo, and the savepoint
   * there is its predecessor's.
   */
  async rollback(lane: Lane): Promise<void> {
    if (lane.aheadFailed !== undefined) {
      await this.#failGroup(lane, lane.aheadFailed);
    } else if (lane.pending === undefined) {
      try {
        await (lane.connection as DatabaseConnection).executeQuery(UNDO_MEMBER);
      } catch (err) {
        await this.#failGroup(lane, err);
      }
    }
    await this.#endRun(lane);
  }

  /**
   * After a member: commits the group unless others wait and it is under its caps, then passes the lane on. Never
   * throws: every member is settled and the lane handed on whatever the server answers.
   */
  async #endRun(lane: Lane): Promise<void> {
    try {
      if (
        lane.open &&
        (lane.queue.length === 0 ||
          lane.members.length >= this.#options.maxMembers ||
          performance.now() - lane.openedAt >= this.#options.maxDelayMs)
      ) {
        await this.#commitGroup(lane);
      }
    } catch (err) {
      await this.#failGroup(lane, err);
    } finally {
      this.#handOff(lane);
    }
  }

  #handOff(lane: Lane): void {
    // A member is done: what it deferred was sent, or was never sent and so has nothing to undo (a member that
    // failed); never the next member's.
    this.dropDeferred(lane);
    const next = lane.queue.shift();
    if (next) {
      next();
      return;
    }
    lane.held = false;
    const connection = lane.connection;
    lane.connection = undefined;
    // Kept while members queue (the next group opens on it); back to the pool for reads once the lane is idle.
    if (connection) void this.#driver.releaseConnection(connection).catch(() => {});
  }

  async #commitGroup(lane: Lane): Promise<void> {
    const connection = lane.connection as DatabaseConnection;
    const members = lane.members;
    lane.members = [];
    lane.open = false;
    // No member ran a statement, so the group's BEGIN was never sent: there is nothing to commit.
    const begun = lane.pending !== this.#openGroup;
    lane.pending = undefined;
    lane.aheadFailed = undefined;
    let failure: unknown;
    try {
      const { rows } = begun ? await connection.executeQuery<{ command?: string }>(COMMIT) : { rows: [] };
      // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK; each member was undone to its own
      // savepoint when it failed, so this means the server lost the transaction some other way.
      if (rows[0]?.command === 'ROLLBACK') failure = new AbortedTransactionError();
    } catch (err) {
      failure = err;
    }
    if (failure === undefined) {
      // A group whose every member failed, or that never began, commits nothing of its own: not counted.
      if (members.length > 0 && begun) this.stats.commits++;
      this.stats.committedMembers += members.length;
      for (const m of members) m.resolve();
      return;
    }
    this.#lose(members, failure);
    await this.#discard(lane, connection);
  }

  /** Rolls back the lane's open group: its members fail with `cause`. */
  async #failGroup(lane: Lane, cause: unknown): Promise<void> {
    const members = lane.members;
    lane.members = [];
    lane.open = false;
    lane.pending = undefined;
    lane.aheadFailed = undefined;
    this.#lose(members, cause);
    if (lane.connection) await this.#discard(lane, lane.connection);
  }

  /**
   * Fails the members of a lost group with the server's error as it is: a deadlock, serialization failure or lock
   * timeout runs each again alone (RetryingKysely), a lost connection is answered 503 (error-handler.ts).
   */
  #lose(members: Waiter[], cause: unknown): void {
    if (members.length > 0) {
      this.stats.failedGroups++;
      this.stats.failedMembers += members.length;
    }
    for (const m of members) m.reject(cause);
  }

  /**
   * Ends whatever transaction the connection is in and returns it to the pool; Kysely's driver marks a connection
   * whose ROLLBACK fails so that the pool closes it rather than lend it out mid-transaction.
   */
  async #discard(lane: Lane, connection: DatabaseConnection): Promise<void> {
    lane.connection = undefined;
    try {
      await this.#driver.rollbackTransaction(connection);
    } catch {
      // Marked for discard by the driver.
    }
    await this.#driver.releaseConnection(connection).catch(() => {});
  }
}

/**
 * One use of the database: a transaction, which joins a group, or statements outside one, which run on a pooled
 * connection taken at the first of them (so `db.connection()` keeps one server session, and a transaction begun
 * on it after a statement stays on it, alone).
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
    if (!this.#failed) {
      // Writes still deferred are sent before the member joins its group's COMMIT; if one fails, Kysely rolls the
      // member back (its savepoint) as for any failed statement.
      try {
        await this.#committer.flush(lane);
      } catch (err) {
        this.#failed = true;
        throw err;
      }
    }
    this.#lane = undefined;
    if (this.#failed) {
      // As PostgreSQL and Kysely do with COMMIT after an error: the member is rolled back, and told so.
      await this.#committer.rollback(lane);
      throw new AbortedTransactionError();
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

  /** Forgets the member's deferred writes, which a rollback to one of its savepoints is about to undo. */
  dropDeferred(): void {
    if (this.#lane) this.#committer.dropDeferred(this.#lane);
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
    if (!lane) {
      yield* (await this.#connection()).streamQuery<R>(query, chunkSize);
      return;
    }
    try {
      yield* this.#committer.stream<R>(lane, query, chunkSize);
    } catch (err) {
      this.#failed = true;
      throw err;
    }
  }

  /**
   * Returns the session's own connection, if it took one. A member still open here was never ended (Kysely ends
   * none after a callback that threw AbortedTransactionError): it is rolled back, so its lane goes on.
   */
  async release(): Promise<void> {
    const lane = this.#lane;
    this.#lane = undefined;
    if (lane) await this.#committer.rollback(lane);
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

  init(options?: AbortableOperationOptions): Promise<void> {
    return this.#inner.init(options);
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

  savepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.#inner.savepoint(connection, name, compile);
  }

  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    (connection as PgGroupSession).dropDeferred();
    await this.#inner.rollbackToSavepoint(connection, name, compile);
    (connection as PgGroupSession).undidToSavepoint();
  }

  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.#inner.releaseSavepoint(connection, name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return (connection as PgGroupSession).release();
  }

  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
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
