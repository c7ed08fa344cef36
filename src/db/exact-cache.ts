import { sql } from 'kysely';
import type { Db, Dialect } from './database.ts';

/**
 * A value that changes whenever anything is committed to the database, by any connection or process: the
 * version cached answers are kept under. SQLite: this connection's own row changes plus `data_version` (bumped by
 * commits of every other connection); read on `ctx.db`, whose queries wait for an open transaction to end.
 * PostgreSQL: the current snapshot (a write needs a transaction id, which moves xmax, and its commit leaves the
 * in-progress list).
 */
async function dataVersion(db: Db, dialect: Dialect): Promise<string> {
  if (dialect === 'postgres') {
    const r = await sql<{ v: string }>`select pg_current_snapshot()::text as v`.execute(db);
    return r.rows[0]?.v ?? '';
  }
  const r = await sql<{
    c: number;
    v: number;
  }>`select total_changes() as c, (select data_version from pragma_data_version) as v`.execute(db);
  const row = r.rows[0];
  return row ? `${row.c}:${row.v}` : '';
}

/**
 * An exact cache of read answers (searches, single tags, token checks): an answer is reused only while the
 * database is unchanged since it was computed (any committed write anywhere, by this process or another, moves
 * the data version: `dataVersion`). So a cached answer is always the answer a fresh read would give: no
 * staleness, nothing a viewer may no longer see, read-your-writes kept. Keys hold the viewer, so one viewer's
 * answer is never given to another. Identical requests arriving while one is being computed share it.
 */
export class ExactCache<T> {
  readonly #entries = new Map<string, { version: string; value: T; weight: number }>();
  readonly #pending = new Map<string, Promise<T>>();
  readonly #weigh: (value: T) => number;
  #weight = 0;
  #version = '';
  /** Most weight held over all answers. */
  readonly maxWeight: number;

  /** `maxWeight`: most weight held over all answers; `weigh`: an answer's weight (e.g. its item count, at least 1). */
  constructor(maxWeight: number, weigh: (value: T) => number) {
    this.maxWeight = maxWeight;
    this.#weigh = weigh;
  }

  /**
   * The cached answer for `key` at this data version, or the one `compute` gives (then cached). `fresh` skips the
   * cached and shared answers and computes anew (the client asked for no cached answer).
   */
  async get(version: string, key: string, compute: () => Promise<T>, fresh = false): Promise<T> {
    if (this.maxWeight <= 0) return compute();
    if (version !== this.#version) {
      // The database changed: every answer computed before is outdated.
      this.clear();
      this.#version = version;
    }
    if (fresh) {
      const value = await compute();
      if (this.#version === version) this.#store(key, version, value);
      return value;
    }
    const hit = this.#entries.get(key);
    if (hit && hit.version === version) {
      // Refresh recency so the least recently used answers are evicted first.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit.value;
    }
    const pendingKey = `${version}\u0000${key}`;
    const running = this.#pending.get(pendingKey);
    if (running) return running;
    const promise = compute();
    this.#pending.set(pendingKey, promise);
    try {
      const value = await promise;
      // Stored only if no write was seen meanwhile (a newer version cleared the cache and started a new one).
      if (this.#version === version) this.#store(key, version, value);
      return value;
    } finally {
      this.#pending.delete(pendingKey);
    }
  }

  /** Forgets every answer (answers being computed are still shared by their waiting requests). */
  clear(): void {
    this.#entries.clear();
    this.#weight = 0;
  }

  /** How many answers are held. */
  get size(): number {
    return this.#entries.size;
  }

  #store(key: string, version: string, value: T): void {
    const weight = Math.max(1, this.#weigh(value));
    if (weight > this.maxWeight) return;
    const old = this.#entries.get(key);
    if (old) {
      this.#entries.delete(key);
      this.#weight -= old.weight;
    }
    this.#entries.set(key, { version, value, weight });
    this.#weight += weight;
    for (const [k, e] of this.#entries) {
      if (this.#weight <= this.maxWeight) break;
      this.#entries.delete(k);
      this.#weight -= e.weight;
    }
  }
}

/** Where a cached read's answers live and what limits them: one cache per database handle and purpose. */
export interface ReadCacheScope {
  /** The app's database (its Kysely instance identifies the cache) and engine. */
  db: Db;
  dialect: Dialect;
  /** Most weight held (0: no cache); read when the cache is first made. */
  capacity: number;
}

// Keyed by the database handle: a version is only meaningful for the database it was read from.
const readCaches = new WeakMap<Db, Map<string, ExactCache<unknown>>>();

/**
 * The answer of a read from the exact cache named `purpose` of `scope` while the database is unchanged since it was
 * computed, else `compute`d (and kept). `fresh` (the request said `Cache-Control: no-cache`) computes anew.
 * `weigh` gives an answer's weight against the capacity (default 1 per answer).
 */
export async function cachedRead<T>(
  scope: ReadCacheScope,
  purpose: string,
  key: string,
  fresh: boolean,
  compute: () => Promise<T>,
  weigh: (value: T) => number = () => 1,
): Promise<T> {
  if (scope.capacity <= 0) return compute();
  let byPurpose = readCaches.get(scope.db);
  if (!byPurpose) {
    byPurpose = new Map();
    readCaches.set(scope.db, byPurpose);
  }
  let cache = byPurpose.get(purpose) as ExactCache<T> | undefined;
  if (!cache) {
    cache = new ExactCache<T>(scope.capacity, weigh);
    byPurpose.set(purpose, cache as ExactCache<unknown>);
  }
  return cache.get(await dataVersion(scope.db, scope.dialect), key, compute, fresh);
}
