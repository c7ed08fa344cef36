import { Worker } from 'node:worker_threads';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { ReaderRequest, ReaderResponse } from './reader-worker.ts';
import { releaseHeapFlagsForWorkers } from './worker-heap.ts';

/** Options of a pool of read-only SQLite connections, each on its own thread. */
export interface ReaderPoolOptions {
  path: string;
  size: number;
  busyTimeoutMs?: number;
  /** JavaScript heap limit of each reader thread in MB (its old generation; default 64; the API passes its setting). */
  heapMb?: number;
  /** SQLite page cache of each reader's connection in MB (default: SQLite's own, 2 MB). */
  cacheMb?: number;
}

/** Young generation of a reader thread in MB: rows live there only until they are posted to the main thread. */
export const READER_YOUNG_GENERATION_MB = 12;

interface Job {
  request: ReaderRequest;
  resolve: (rows: unknown[]) => void;
  reject: (err: Error) => void;
}

interface Reader {
  worker: Worker;
  job: Job | undefined;
}

// Only reads go to the pool: a statement starting with SELECT or WITH (the connections are read-only as well).
const READ_ONLY_SQL = /^\s*(select|with)\b/i;

/** An error shaped like node:sqlite's, so the error handler maps it the same way (SQLITE_BUSY -> 503). */
function sqliteError(e: { message: string; code?: string; errcode?: number; errstr?: string }): Error {
  return Object.assign(new Error(e.message), {
    code: e.code ?? 'ERR_SQLITE_ERROR',
    errcode: e.errcode ?? 1,
    errstr: e.errstr ?? 'SQL logic error',
  });
}

/**
 * A read the pool cannot run, failed like an unopenable database (SQLITE_CANTOPEN: 503, retry), not an unexpected
 * 500: its reader stopped, or the pool is closing because the process shuts down (only a request whose client left
 * meets that: a server that closes waits for the requests of its open connections before it closes the pool).
 */
function unavailableError(message: string): Error {
  return sqliteError({ message, errcode: 14, errstr: 'unable to open' });
}

const CLOSED = 'The reader pool is closed.';

/**
 * Rows posted as arrays (reader-worker.ts) as the objects Kysely returns: a later column of a name wins, as in
 * node:sqlite's own objects. A column named `__proto__` is made an own property, as the main connection's copy makes
 * it, never the object's prototype.
 */
function rowObjects(columns: string[], rows: unknown[][]): Record<string, unknown>[] {
  const out = new Array<Record<string, unknown>>(rows.length);
  const plainNames = !columns.includes('__proto__');
  for (let i = 0; i < rows.length; i++) {
    const values = rows[i] as unknown[];
    const row: Record<string, unknown> = {};
    for (let k = 0; k < columns.length; k++) {
      const name = columns[k] as string;
      if (plainNames || name !== '__proto__') row[name] = values[k];
      else
        Object.defineProperty(row, name, {
          value: values[k],
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    out[i] = row;
  }
  return out;
}

/**
 * Runs SELECTs on worker threads, each with its own read-only connection to the same WAL file, so a slow read
 * (ranked search, deep sorted page) no longer blocks the event loop: node:sqlite is synchronous.
 */
export class ReaderPool {
  readonly #options: ReaderPoolOptions;
  readonly #readers: Reader[] = [];
  readonly #queue: Job[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: ReaderPoolOptions) {
    this.#options = options;
  }

  /** Runs one read-only statement on a free reader and resolves with its rows as plain objects. */
  query(sql: string, parameters: ReadonlyArray<unknown>): Promise<unknown[]> {
    if (this.#closed) return Promise.reject(unavailableError(CLOSED));
    if (!READ_ONLY_SQL.test(sql)) {
      return Promise.reject(new Error('The reader pool runs only SELECT statements; use ctx.db for writes.'));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({
        request: { id: this.#nextId++, sql, parameters: [...parameters] },
        resolve,
        reject,
      });
      this.#dispatch();
    });
  }

  /** Stops every worker; queued and running queries are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(unavailableError(CLOSED));
    const readers = this.#readers.splice(0);
    await Promise.all(readers.map((r) => r.worker.terminate()));
    for (const r of readers) r.job?.reject(unavailableError(CLOSED));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const reader = this.#readers.find((r) => r.job === undefined) ?? this.#spawn();
      if (!reader) return;
      const job = this.#queue.shift() as Job;
      reader.job = job;
      // A running query keeps the process alive like any pending I/O; an idle reader does not (see #spawn).
      reader.worker.ref();
      reader.worker.postMessage(job.request);
    }
  }

  // Workers start on first use, so an app that never reads through the pool costs no threads.
  #spawn(): Reader | undefined {
    if (this.#readers.length >= this.#options.size) return undefined;
    releaseHeapFlagsForWorkers();
    const worker = new Worker(new URL('./reader-worker.ts', import.meta.url), {
      workerData: {
        path: this.#options.path,
        busyTimeoutMs: this.#options.busyTimeoutMs ?? 5000,
        cacheMb: this.#options.cacheMb,
      },
      // Each thread is a V8 isolate of its own, which V8 would size like a whole process's (docs/deployment.md).
      // A read whose rows outgrow the heap stops the thread (ERR_WORKER_OUT_OF_MEMORY): answered 503 below.
      resourceLimits: {
        maxOldGenerationSizeMb: this.#options.heapMb ?? 64,
        maxYoungGenerationSizeMb: READER_YOUNG_GENERATION_MB,
      },
    });
    // An idle pool must not keep the process alive (a CLI or test that forgets to close it still exits).
    worker.unref();
    const reader: Reader = { worker, job: undefined };
    worker.on('message', (response: ReaderResponse) => {
      const job = reader.job;
      if (!job || job.request.id !== response.id) return;
      reader.job = undefined;
      worker.unref();
      if ('error' in response) job.reject(sqliteError(response.error));
      else job.resolve(rowObjects(response.columns, response.rows));
      this.#dispatch();
    });
    const lost = (err: Error) => {
      const index = this.#readers.indexOf(reader);
      if (index < 0) return;
      this.#readers.splice(index, 1);
      // The next query starts a new reader.
      reader.job?.reject(unavailableError(`A database reader stopped: ${err.message}`));
      reader.job = undefined;
      if (!this.#closed) this.#dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`exit code ${code}`)));
    this.#readers.push(reader);
    return reader;
  }
}

class ReaderConnection implements DatabaseConnection {
  readonly #pool: ReaderPool;

  constructor(pool: ReaderPool) {
    this.#pool = pool;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const rows = await this.#pool.query(compiledQuery.sql, compiledQuery.parameters);
    return { rows: rows as R[] };
  }

  async *streamQuery<R>(
    compiledQuery: CompiledQuery,
    chunkSize: number,
  ): AsyncIterableIterator<QueryResult<R>> {
    const { rows } = await this.executeQuery<R>(compiledQuery);
    for (let i = 0; i < rows.length; i += chunkSize) yield { rows: rows.slice(i, i + chunkSize) };
  }
}

class ReaderPoolDriver implements Driver {
  readonly #pool: ReaderPool;
  readonly #connection: ReaderConnection;

  constructor(pool: ReaderPool) {
    this.#pool = pool;
    this.#connection = new ReaderConnection(pool);
  }

  async init(): Promise<void> {}

  // One shared connection object: each query goes to whichever worker is free, so there is nothing to check out.
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.#connection;
  }

  async beginTransaction(): Promise<void> {
    throw new Error('The reader pool has no transactions; use ctx.db inside a transaction.');
  }

  async commitTransaction(): Promise<void> {}

  async rollbackTransaction(): Promise<void> {}

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    await this.#pool.close();
  }
}

/**
 * SQLite's adapter, but for many connections: Kysely puts every query of an adapter that says SQLite has one
 * connection behind a mutex, which made the pool run one query at a time on one thread whatever its size.
 */
class ReaderPoolAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

/** A Kysely dialect whose queries run on a ReaderPool (SQLite SQL, read-only, no transactions). */
export class ReaderPoolDialect implements Dialect {
  readonly #pool: ReaderPool;

  constructor(pool: ReaderPool) {
    this.#pool = pool;
  }

  createDriver(): Driver {
    return new ReaderPoolDriver(this.#pool);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new ReaderPoolAdapter();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
