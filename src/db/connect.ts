import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database, Dialect } from './database.ts';
import { registerDirectVersionReader } from './exact-cache.ts';
import type { GroupCommitOptions, GroupCommitStats } from './group-commit.ts';
import {
  PG_GROUP_COMMIT_DEFAULTS,
  PgGroupCommitDialect,
  type PgGroupCommitOptions,
  type PgGroupCommitStats,
} from './pg-group-commit.ts';
import { prepareStatements } from './prepared-statements.ts';
import { ReaderPool, ReaderPoolDialect } from './reader-pool.ts';
import { RetryingKysely } from './retrying-kysely.ts';
import { NodeSqliteDatabase, NodeSqliteDialect } from './sqlite-driver.ts';

/** An open database with the engine it runs on. */
export interface DbHandle {
  db: Kysely<Database>;
  /**
   * For heavy reads outside transactions: on a SQLite file with readers > 0 a pool of read-only connections on
   * worker threads (SELECT only); otherwise the same instance as db. Destroy it too when it is not db.
   */
  readDb: Kysely<Database>;
  dialect: Dialect;
  /** The SQLite file path, or undefined for PostgreSQL and in-memory databases. */
  sqlitePath: string | undefined;
  /** SQLite with group commit: its counters (how many transactions each fsync acknowledged). */
  groupCommitStats?: () => Readonly<GroupCommitStats> | undefined;
  /** PostgreSQL with group commit: its counters (how many transactions each COMMIT acknowledged). */
  pgGroupCommitStats?: () => Readonly<PgGroupCommitStats> | undefined;
}

const TIMESTAMPTZ = 1184;
const INT8 = 20;
// Both engines hand timestamps to the services as ISO 8601 UTC strings and counts as numbers.
pg.types.setTypeParser(TIMESTAMPTZ, (v) => new Date(v).toISOString());
pg.types.setTypeParser(INT8, (v) => Number(v));

/** Options shared by both engines. */
export interface ConnectOptions {
  synchronous?: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';
  poolSize?: number;
  statementTimeoutMs?: number;
  /** SQLite files only: reader threads behind readDb (0, the default: readDb is db). */
  readers?: number;
  /** SQLite files only: JavaScript heap limit of each reader thread in MB (default 64; the API's is 48). */
  readerHeapMb?: number;
  /** SQLite files only: page cache of each reader thread's connection in MB (default: SQLite's 2 MB). */
  readerCacheMb?: number;
  /**
   * SQLite files only: commit concurrent transactions together, one fsync for the group (docs/reliability.md).
   * On by default; false commits each transaction alone. In-memory databases never group (nothing to sync).
   */
  groupCommit?: boolean | GroupCommitOptions;
  /**
   * PostgreSQL only: run concurrent transactions in groups that share one COMMIT (pg-group-commit.ts). Off by
   * default (the CLI's transactions set transaction-local settings); the API turns it on.
   */
  pgGroupCommit?: boolean | Partial<PgGroupCommitOptions>;
  /**
   * PostgreSQL only: how long a pooled connection may sit idle before it is closed, in ms; 0 keeps every connection
   * the pool opened (at most poolSize). Default: node-postgres's 10 s.
   */
  idleTimeoutMs?: number;
}

/** Pages a PostgreSQL bitmap heap scan asks the OS to prefetch (docs/search.md, "Deep pages from disk"). */
const PG_IO_CONCURRENCY = 64;

/** Closes what connectDatabase opened: the reader threads, then the connections. */
export async function closeDatabase(handle: DbHandle): Promise<void> {
  if (handle.readDb !== handle.db) await handle.readDb.destroy();
  await handle.db.destroy();
}

/** Opens the database named by a DATABASE_URL (sqlite:PATH or postgres://...). */
export function connectDatabase(url: string, options: ConnectOptions = {}): DbHandle {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || ':memory:';
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const synchronous = options.synchronous ?? 'FULL';
    const database = new NodeSqliteDatabase({ path, synchronous });
    const grouped = path !== ':memory:' && options.groupCommit !== false;
    // Group commit reads outside transactions through a second connection that sees committed data only.
    const reader = grouped ? new NodeSqliteDatabase({ path, synchronous, readOnly: true }) : undefined;
    const groupCommit = typeof options.groupCommit === 'object' ? options.groupCommit : undefined;
    const dialect = new NodeSqliteDialect({
      database,
      ...(reader ? { reader } : {}),
      ...(groupCommit ? { groupCommit } : {}),
    });
    const db = new Kysely<Database>({ dialect });
    // With group commit, reads outside transactions (the data version's query too) go to the committed-data
    // connection, whose data_version moves with every commit of the write connection or another process.
    if (reader) {
      registerDirectVersionReader(db, () => ({
        data: String(reader.dataVersion()),
        auth: String(reader.authVersion()),
      }));
    }
    // An in-memory database belongs to its one connection, so no other thread can read it.
    const readers = path === ':memory:' ? 0 : (options.readers ?? 0);
    const readDb =
      readers > 0
        ? new Kysely<Database>({
            dialect: new ReaderPoolDialect(
              new ReaderPool({
                path,
                size: readers,
                ...(options.readerHeapMb ? { heapMb: options.readerHeapMb } : {}),
                ...(options.readerCacheMb ? { cacheMb: options.readerCacheMb } : {}),
              }),
            ),
          })
        : db;
    return {
      db,
      readDb,
      dialect: 'sqlite',
      sqlitePath: path === ':memory:' ? undefined : path,
      ...(reader ? { groupCommitStats: () => dialect.groupCommitStats() } : {}),
    };
  }
  const poolSize = options.poolSize ?? 10;
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    // JIT compilation adds about 350 ms to short visibility-heavy queries and never pays off for this workload.
    options: '-c jit=off',
    // A burst of writes on one row (e.g. many reactions to one author) queues for connections; waiting out such a
    // burst beats answering 503, while an unreachable server still fails fast with a connection error.
    connectionTimeoutMillis: 15_000,
    ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMillis: options.idleTimeoutMs } : {}),
    // TCP keepalives after 60 s of silence: a connection kept idle through a quiet spell is not dropped by a NAT or
    // firewall that forgets silent flows, and one whose server vanished while it sat idle is found dead before the
    // next query takes it.
    keepAlive: true,
    keepAliveInitialDelayMillis: 60_000,
  });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  // A client checked out of the pool has no error listener: a backend terminated mid-query (restart, failover,
  // pg_terminate_backend) would emit an unhandled 'error' and kill the process. The query itself still rejects.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // A deep search page reads thousands of scattered heap pages through a bitmap scan; the server's default of 1
    // reads them one at a time from disk (2.1 s for one cold page here, 0.57 s with prefetching). Servers without
    // posix_fadvise refuse the setting, which then stays at their default. Queued before any query of the client.
    client.query(`set effective_io_concurrency = ${PG_IO_CONCURRENCY}`).catch(() => {});
    prepareStatements(client);
  });
  if (!options.pgGroupCommit) {
    const db = new RetryingKysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, readDb: db, dialect: 'postgres', sqlitePath: undefined };
  }
  const asked = options.pgGroupCommit === true ? {} : options.pgGroupCommit;
  const grouping = { ...PG_GROUP_COMMIT_DEFAULTS };
  for (const [key, value] of Object.entries(asked) as [keyof PgGroupCommitOptions, number | undefined][]) {
    if (value !== undefined) grouping[key] = value;
  }
  // Lanes hold a pooled connection while their group is open: half the pool at most, the rest serves reads.
  grouping.lanes = Math.max(1, Math.min(grouping.lanes, Math.floor(poolSize / 2)));
  const grouped = new PgGroupCommitDialect({ pool }, grouping);
  const db = new RetryingKysely<Database>({ dialect: grouped });
  return {
    db,
    readDb: db,
    dialect: 'postgres',
    sqlitePath: undefined,
    pgGroupCommitStats: () => grouped.groupCommitStats(),
  };
}
