import { DatabaseSync, type StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  SqliteDriver,
  type SqliteStatement,
} from 'kysely';
import {
  GROUP_COMMIT_DEFAULTS,
  GroupCommitAdapter,
  GroupCommitDriver,
  type GroupCommitOptions,
  type GroupCommitStats,
  GroupCommitter,
} from './group-commit.ts';
import { foldForIndex } from './search-fold.ts';
import { FLUSH_PENDING_SEARCH_DOCS } from './search-pending.ts';
import { searchStatsFunction } from './search-stats.ts';

/** Options of the embedded database connection. */
export interface SqliteOptions {
  path: string;
  synchronous: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';
  busyTimeoutMs?: number;
  readOnly?: boolean;
}

const CACHE_SIZE = 500;

/** Binds values the way the rest of the code expects: dates as ISO text, booleans as 1/0, undefined as NULL. */
function bindable(value: unknown): unknown {
  if (value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

function bindAll(parameters: ReadonlyArray<unknown>): unknown[] {
  return parameters.map(bindable);
}

/** Null-prototype rows from node:sqlite become plain objects, so they serialize and compare like pg rows. */
function plain(row: unknown): unknown {
  return row === undefined ? row : { ...(row as object) };
}

/** A prepared statement of a NodeSqliteDatabase, as Kysely's SQLite driver calls it. */
export class CachedStatement implements SqliteStatement {
  readonly reader: boolean;
  readonly #stmt: StatementSync;

  constructor(stmt: StatementSync) {
    this.#stmt = stmt;
    this.reader = stmt.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#stmt.all(...(bindAll(parameters) as never[])).map(plain);
  }

  run(parameters: ReadonlyArray<unknown>) {
    const r = this.#stmt.run(...(bindAll(parameters) as never[]));
    return { changes: r.changes, lastInsertRowid: r.lastInsertRowid };
  }

  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    for (const row of this.#stmt.iterate(...(bindAll(parameters) as never[]))) yield plain(row);
  }

  /** The names of the result's columns, in order (the keys of iterate's rows). */
  columnNames(): string[] {
    return this.#stmt.columns().map((c) => c.name);
  }

  /**
   * The rows as arrays in column order: a reader thread posts them to the main thread, and an array of values is
   * copied between threads in about half the time of an object that names each of its keys again. Read it to the
   * end (or return() it): the statement is shared through the cache and gives objects again only then.
   */
  *iterateArrays(parameters: ReadonlyArray<unknown>): IterableIterator<unknown[]> {
    this.#stmt.setReturnArrays(true);
    try {
      for (const row of this.#stmt.iterate(...(bindAll(parameters) as never[])))
        yield row as unknown as unknown[];
    } finally {
      this.#stmt.setReturnArrays(false);
    }
  }
}

/** node:sqlite behind Kysely's SqliteDatabase interface, with a prepared-statement cache. */
export class NodeSqliteDatabase implements SqliteDatabase {
  readonly raw: DatabaseSync;
  /** The file, or undefined for an in-memory database. */
  readonly path: string | undefined;
  /** How long a statement waits for another connection's lock before failing with SQLITE_BUSY. */
  readonly busyTimeoutMs: number;
  /** The synchronous mode asked for (the group committer may run FULL as NORMAL plus its own flush). */
  readonly synchronous: SqliteOptions['synchronous'];
  readonly #cache = new Map<string, CachedStatement>();
  #dataVersion: StatementSync | undefined;
  #authVersion: StatementSync | undefined;
  /** While set, the search triggers note new documents in search_pending instead of indexing them. */
  #deferSearch = false;
  /** Whether a trigger noted a document since deferring began: the flush has work. */
  #searchNoted = false;

  constructor(options: SqliteOptions) {
    this.path = options.path === ':memory:' ? undefined : options.path;
    this.raw = new DatabaseSync(options.path, { readOnly: options.readOnly ?? false });
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.synchronous = options.synchronous;
    this.raw.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
    if (!options.readOnly) this.raw.exec('PRAGMA journal_mode = WAL');
    this.raw.exec(`PRAGMA synchronous = ${options.synchronous}`);
    this.raw.exec('PRAGMA foreign_keys = ON');
    // The search index's triggers fold text with the same JavaScript as queries (migration 0003-search-fold).
    this.raw.function('search_fold', { deterministic: true }, (t) =>
      foldForIndex(t === null ? null : String(t)),
    );
    // Relevance's statistics of a candidate's text, read on the thread that reads the row (src/db/search-stats.ts).
    this.raw.function('search_stats', { deterministic: true }, searchStatsFunction);
    // Asked by the search triggers once per document written (migration 0026).
    this.raw.function('search_defer', { deterministic: false }, () => {
      if (!this.#deferSearch) return 0;
      this.#searchNoted = true;
      return 1;
    });
  }

  /**
   * From now until flushSearchIndex or dropDeferredSearch, new and changed search documents wait in search_pending
   * to be indexed together (search-pending.ts). Only for a transaction that ends with one of those two.
   */
  deferSearchIndex(): void {
    this.#deferSearch = true;
    this.#searchNoted = false;
  }

  /** Indexes the documents noted since deferSearchIndex, inside the open transaction, and stops deferring. */
  flushSearchIndex(): void {
    this.#deferSearch = false;
    if (!this.#searchNoted) return;
    this.#searchNoted = false;
    for (const statement of FLUSH_PENDING_SEARCH_DOCS) this.prepare(statement).run([]);
  }

  /** Stops deferring without indexing: the transaction is rolled back, and its notes with it. */
  dropDeferredSearch(): void {
    this.#deferSearch = false;
    this.#searchNoted = false;
  }

  prepare(sql: string): CachedStatement {
    let stmt = this.#cache.get(sql);
    if (stmt) {
      // Refresh recency so the cache evicts the least recently used statement.
      this.#cache.delete(sql);
      this.#cache.set(sql, stmt);
      return stmt;
    }
    stmt = new CachedStatement(this.raw.prepare(sql));
    this.#cache.set(sql, stmt);
    if (this.#cache.size > CACHE_SIZE) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    return stmt;
  }

  /**
   * SQLite's `data_version` of this connection: it changes when another connection (of this process or another)
   * commits. Read directly, not through Kysely, as the exact read caches read it on every request.
   */
  dataVersion(): number {
    this.#dataVersion ??= this.raw.prepare('PRAGMA data_version');
    return Number((this.#dataVersion.get() as { data_version: number }).data_version);
  }

  /** The auth version (migration 0021), read directly for the same reason as dataVersion. */
  authVersion(): number {
    this.#authVersion ??= this.raw.prepare('SELECT n FROM auth_version WHERE id = 1');
    return Number((this.#authVersion.get() as { n: number }).n);
  }

  close(): void {
    this.#dataVersion = undefined;
    this.#authVersion = undefined;
    this.#cache.clear();
    if (this.raw.isOpen) this.raw.close();
  }
}

/** Kysely's SQLite driver, but transactions take the write lock up front (BEGIN IMMEDIATE). */
class ImmediateSqliteDriver extends SqliteDriver {
  // A deferred transaction that reads and then writes fails at once with SQLITE_BUSY when another process
  // holds the write lock (the busy timeout is not applied to lock upgrades); taking the lock first waits instead.
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * Kysely's SQLite adapter, saying what is true of SQLite: its DDL is transactional. Kysely's migrator then runs the
 * pending migrations in one transaction, as on PostgreSQL: a start stopped halfway (an index build over a grown
 * table killed by Ctrl-C) leaves neither a half-applied migration, which no rerun could get past ("duplicate
 * column"), nor one applied but unrecorded; and BEGIN IMMEDIATE makes a second process that migrates wait for the
 * first, then find nothing left to do.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** Configuration of the dialect: the write connection and, for group commit, a committed-data connection. */
export interface NodeSqliteDialectConfig {
  database: NodeSqliteDatabase;
  /** A second connection to the same file; with it, transactions are group-committed (see GroupCommitter). */
  reader?: NodeSqliteDatabase;
  groupCommit?: GroupCommitOptions;
}

/** SQLite dialect over node:sqlite whose transactions begin immediately, group-committed when a reader is given. */
export class NodeSqliteDialect extends SqliteDialect {
  readonly #config: NodeSqliteDialectConfig;
  #committer: GroupCommitter | undefined;

  constructor(config: NodeSqliteDialectConfig) {
    super({ database: config.database });
    this.#config = config;
  }

  createDriver(): Driver {
    const { database, reader, groupCommit } = this.#config;
    if (!reader) return new ImmediateSqliteDriver({ database });
    this.#committer = new GroupCommitter(database, reader, groupCommit ?? GROUP_COMMIT_DEFAULTS);
    return new GroupCommitDriver(this.#committer);
  }

  /** The group committer's counters (undefined without group commit, or before the first query). */
  groupCommitStats(): Readonly<GroupCommitStats> | undefined {
    return this.#committer?.stats;
  }

  createAdapter(): DialectAdapter {
    return this.#config.reader ? new GroupCommitAdapter() : new TransactionalDdlSqliteAdapter();
  }
}
