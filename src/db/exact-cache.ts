import { sql } from 'kysely';
import type { Db, Dialect } from './database.ts';

/**
 * The versions cached answers are kept under, read together. `data` moves with every commit. `auth` moves with
 * every change a token check could see: tokens, clients, a user's role, a deleted user (migration 0021), so token
 * checks stay cached while posts and reactions are written.
 */
export interface Versions {
  data: string;
  auth: string;
}

/**
 * Reads of a synchronous version source, shared by the requests of one event-loop turn: taken once, after the
 * turn's I/O callbacks (setImmediate), when every request that asked during the turn has arrived, so each gets a
 * version read after it arrived (exact), and under load one read serves every request the turn took in.
 */
export class TurnSharedReads {
  readonly #read: () => Versions;
  #pending: Promise<Versions> | undefined;

  constructor(read: () => Versions) {
    this.#read = read;
  }

  /** A version read after this call, in this turn's check phase. */
  get(): Promise<Versions> {
    this.#pending ??= new Promise<Versions>((resolve, reject) => {
      setImmediate(() => {
        this.#pending = undefined;
        try {
          resolve(this.#read());
        } catch (err) {
          reject(err);
        }
      });
    });
    return this.#pending;
  }
}

// Direct readers of the versions that skip the query builder (connect.ts registers them).
const directVersionReaders = new WeakMap<Db, TurnSharedReads>();

/**
 * Registers a direct, synchronous reader of `db`'s versions, used instead of the query below: its data version must
 * change on every commit that query would see. Its reads are shared by the requests of a turn (TurnSharedReads).
 */
export function registerDirectVersionReader(db: Db, read: () => Versions): void {
  directVersionReaders.set(db, new TurnSharedReads(read));
}

/**
 * Version reads of one PostgreSQL database, shared by the requests that wait at the same time. A read already sent
 * when a request asks may have been taken before that request arrived, so the request waits for the next one, sent
 * as soon as the running one returns and shared by everyone who asked in the meantime: each still gets a version
 * read after it asked (exact), and under load the database sees one version query per round trip instead of one
 * per request.
 */
export class SharedVersionReads {
  readonly #read: () => Promise<Versions>;
  #sent: Promise<Versions> | undefined;
  #next: Promise<Versions> | undefined;

  constructor(read: () => Promise<Versions>) {
    this.#read = read;
  }

  /** A version read sent after this call. */
  get(): Promise<Versions> {
    if (this.#next) return this.#next;
    const sent = this.#sent;
    if (!sent) return this.#send();
    const next = sent.then(
      () => this.#sendNext(),
      () => this.#sendNext(),
    );
    this.#next = next;
    return next;
  }

  #sendNext(): Promise<Versions> {
    this.#next = undefined;
    return this.#send();
  }

  #send(): Promise<Versions> {
    const sent = this.#read();
    this.#sent = sent;
    const done = () => {
      if (this.#sent === sent) this.#sent = undefined;
    };
    sent.then(done, done);
    return sent;
  }
}

const sharedPostgresReads = new WeakMap<Db, SharedVersionReads>();

/**
 * The versions cached answers are kept under (Versions). The data version changes whenever anything is committed
 * to the database, by any connection or process. SQLite: this connection's own row changes plus `data_version`
 * (bumped by commits of every other connection); read on `ctx.db`, whose queries wait for an open transaction to
 * end. PostgreSQL: the current snapshot (a write needs a transaction id, which moves xmax, and its commit leaves
 * the in-progress list), read by one query for all requests waiting at once (SharedVersionReads). The auth version
 * is the counter of migration 0021, read by the same statement.
 */
function readVersions(db: Db, dialect: Dialect): Promise<Versions> {
  const direct = directVersionReaders.get(db);
  if (direct) return direct.get();
  if (dialect === 'postgres') {
    let shared = sharedPostgresReads.get(db);
    if (!shared) {
      shared = new SharedVersionReads(async () => {
        const r = await sql<{ v: string; a: string }>`
          select pg_current_snapshot()::text as v, (select n from auth_version where id = 1)::text as a`.execute(
          db,
        );
        return { data: r.rows[0]?.v ?? '', auth: r.rows[0]?.a ?? '' };
      });
      sharedPostgresReads.set(db, shared);
    }
    return shared.get();
  }
  return sqliteVersions(db);
}

async function sqliteVersions(db: Db): Promise<Versions> {
  const r = await sql<{ c: number; v: number; a: number }>`
    select total_changes() as c, (select data_version from pragma_data_version) as v,
      (select n from auth_version where id = 1) as a`.execute(db);
  const row = r.rows[0];
  return row ? { data: `${row.c}:${row.v}`, auth: String(row.a) } : { data: '', auth: '' };
}

// A cache entry's own cost besides key and answer: the Map slot, the entry object and its fields.
const ENTRY_OVERHEAD_BYTES = 96;
// Characters beyond Latin-1 make V8 store the whole string with two bytes per character.
const TWO_BYTE = /[\u0100-\uffff]/;

/**
 * About how many bytes of V8 heap a JSON-like value holds: strings by their length (twice for text beyond
 * Latin-1), objects and arrays by their slots, plus a header each. An estimate for cache budgets: it errs on
 * the large side for short strings and ignores sharing between answers.
 */
export function approxBytes(value: unknown): number {
  if (typeof value === 'string') return 16 + (TWO_BYTE.test(value) ? 2 : 1) * value.length;
  if (value === null || typeof value !== 'object') return 8;
  // A buffer (a rendered answer's bytes, src/http/rendered.ts) by its length, not by walking its indexes.
  if (ArrayBuffer.isView(value)) return 64 + value.byteLength;
  if (Array.isArray(value)) {
    let n = 16 + 8 * value.length;
    for (const item of value) n += approxBytes(item);
    return n;
  }
  let n = 24;
  for (const key in value) {
    // Property names are shared by every object of the same shape: only the slot counts.
    n += 8 + approxBytes((value as Record<string, unknown>)[key]);
  }
  return n;
}

/** The check of a caller that can never be gone (no client to lose, or none given). */
const NEVER_GONE = (): boolean => false;

/**
 * The callers sharing one computation: it may be skipped (src/db/read-gate.ts) only when every one of them has gone,
 * never because the first caller left while others joined it.
 */
class Callers {
  #checks: (() => boolean)[] | undefined;

  /** `abandoned`: the first caller's check; without one the caller can never be gone. */
  constructor(abandoned: (() => boolean) | undefined) {
    this.#checks = abandoned ? [abandoned] : undefined;
  }

  /** Adds a caller that joins the computation. */
  join(abandoned: (() => boolean) | undefined): void {
    if (!abandoned) this.#checks = undefined;
    else this.#checks?.push(abandoned);
  }

  /** Whether every caller has gone. */
  readonly gone = (): boolean => this.#checks?.every((check) => check()) === true;
}

/**
 * An exact cache of read answers (searches, single tags, karma records, token checks): an answer is reused only
 * while the database is unchanged since it was computed (any committed write anywhere, by this process or another,
 * moves the data version: `readVersions`; token checks are kept under the auth version, which every write they
 * could see moves). So a cached answer is always the answer a fresh read would give: no
 * staleness, nothing a viewer may no longer see, read-your-writes kept. Keys hold the viewer, so one viewer's
 * answer is never given to another (a karma record is kept once: its Owner check runs on every request). Identical requests arriving while one is being computed share it.
 */
export class ExactCache<T> {
  readonly #entries = new Map<string, { version: string; value: T; weight: number; bytes: number }>();
  readonly #pending = new Map<string, { promise: Promise<T>; callers: Callers }>();
  readonly #weigh: (value: T) => number;
  #weight = 0;
  #bytes = 0;
  #version = '';
  /** Most weight held over all answers. */
  readonly maxWeight: number;
  /** Most memory held over all answers and their keys, in bytes as `approxBytes` estimates them. */
  readonly maxBytes: number;

  /**
   * `maxWeight`: most weight held over all answers; `weigh`: an answer's weight (e.g. its item count, at least 1);
   * `maxBytes`: most estimated memory held (unbounded when not given).
   */
  constructor(maxWeight: number, weigh: (value: T) => number, maxBytes = Number.POSITIVE_INFINITY) {
    this.maxWeight = maxWeight;
    this.#weigh = weigh;
    this.maxBytes = maxBytes;
  }

  /**
   * The cached answer for `key` at this data version, or the one `compute` gives (then cached). `fresh` skips the
   * cached and shared answers and computes anew (the client asked for no cached answer). `abandoned` says whether
   * this caller has gone; `compute` is given whether every caller sharing the computation has (Callers.gone).
   */
  async get(
    version: string,
    key: string,
    compute: (gone: () => boolean) => Promise<T>,
    fresh = false,
    abandoned?: () => boolean,
  ): Promise<T> {
    if (this.maxWeight <= 0) return compute(abandoned ?? NEVER_GONE);
    if (version !== this.#version) {
      // The database changed: every answer computed before is outdated.
      this.clear();
      this.#version = version;
    }
    if (fresh) {
      const value = await compute(abandoned ?? NEVER_GONE);
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
    if (running) {
      running.callers.join(abandoned);
      return running.promise;
    }
    // Created only for a computation: a cached answer, the usual case, allocates nothing for it.
    const callers = new Callers(abandoned);
    const promise = compute(callers.gone);
    this.#pending.set(pendingKey, { promise, callers });
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
    this.#bytes = 0;
  }

  /** How many answers are held. */
  get size(): number {
    return this.#entries.size;
  }

  /** Estimated memory held by the answers and their keys, in bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  #store(key: string, version: string, value: T): void {
    const weight = Math.max(1, this.#weigh(value));
    if (weight > this.maxWeight) return;
    // Counted apart from the weight: one page of 20 tags holds 2,000 association uuids, a search item a whole post.
    const bytes = ENTRY_OVERHEAD_BYTES + approxBytes(key) + approxBytes(value);
    if (bytes > this.maxBytes) return;
    const old = this.#entries.get(key);
    if (old) {
      this.#entries.delete(key);
      this.#weight -= old.weight;
      this.#bytes -= old.bytes;
    }
    this.#entries.set(key, { version, value, weight, bytes });
    this.#weight += weight;
    this.#bytes += bytes;
    for (const [k, e] of this.#entries) {
      if (this.#weight <= this.maxWeight && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(k);
      this.#weight -= e.weight;
      this.#bytes -= e.bytes;
    }
  }
}

/**
 * The versions of one request, read once at its first cached read (so after the request arrived) and shared
 * by its later ones: the token check and the answer then cost one version read together, which on PostgreSQL is
 * one round trip instead of two. Exact as each read alone: a write committed before the request arrived moved the
 * version before it was read; one committed while the request runs is concurrent with it, and the request may
 * answer from before or after it. Only for requests that do not write: after its own write, a request must read
 * the version anew to see that write.
 */
export class RequestVersion {
  readonly #db: Db;
  readonly #dialect: Dialect;
  #versions: Promise<Versions> | undefined;

  constructor(db: Db, dialect: Dialect) {
    this.#db = db;
    this.#dialect = dialect;
  }

  /** The versions, read on the first call. */
  get(): Promise<Versions> {
    this.#versions ??= readVersions(this.#db, this.#dialect);
    return this.#versions;
  }
}

/** Where a cached read's answers live and what limits them: one cache per database handle and purpose. */
export interface ReadCacheScope {
  /** The app's database (its Kysely instance identifies the cache) and engine. */
  db: Db;
  dialect: Dialect;
  /** Most weight held (0: no cache); read when the cache is first made. */
  capacity: number;
  /** Most memory held, in bytes as `approxBytes` estimates them (default 8 MiB); read when the cache is first made. */
  maxBytes?: number;
  /** The request's version, shared by its cached reads; without it each cached read reads the version itself. */
  version?: RequestVersion | null | undefined;
  /**
   * The version the answers are kept under: the data version (default), or for answers that read only tokens,
   * clients and users' roles (token checks) the auth version, which writes of content leave alone.
   */
  keyedBy?: keyof Versions;
}

/**
 * How a route asks a service for a cached answer: `fresh` (the request said `Cache-Control: no-cache`), the
 * request's shared `version`, and `render`, which turns the service's answer into the form kept in the cache and
 * returned (the route's serialized envelope), so a cached answer is served without converting it again. One
 * route renders the answers of one cache purpose.
 */
export interface AnswerOptions<V, A> {
  fresh: boolean;
  version: RequestVersion | null | undefined;
  render: (value: V) => A;
  /** Whether the client has gone, so a computation still waiting for its turn need not run (src/db/read-gate.ts). */
  abandoned?: () => boolean;
}

// A cache whose scope names no byte budget still has one.
const DEFAULT_CACHE_BYTES = 8 * 2 ** 20;

// Keyed by the database handle: a version is only meaningful for the database it was read from.
const readCaches = new WeakMap<Db, Map<string, ExactCache<unknown>>>();

/**
 * The answer of a read from the exact cache named `purpose` of `scope` while the database is unchanged since it was
 * computed, else `compute`d (and kept). `fresh` (the request said `Cache-Control: no-cache`) computes anew.
 * `weigh` gives an answer's weight against the capacity (default 1 per answer). `abandoned` says whether the caller
 * has gone; `compute` is given whether every caller sharing its computation has (ExactCache.get).
 */
export async function cachedRead<T>(
  scope: ReadCacheScope,
  purpose: string,
  key: string,
  fresh: boolean,
  compute: (gone: () => boolean) => Promise<T>,
  weigh: (value: T) => number = () => 1,
  abandoned?: () => boolean,
): Promise<T> {
  if (scope.capacity <= 0) return compute(abandoned ?? NEVER_GONE);
  let byPurpose = readCaches.get(scope.db);
  if (!byPurpose) {
    byPurpose = new Map();
    readCaches.set(scope.db, byPurpose);
  }
  let cache = byPurpose.get(purpose) as ExactCache<T> | undefined;
  if (!cache) {
    cache = new ExactCache<T>(scope.capacity, weigh, scope.maxBytes ?? DEFAULT_CACHE_BYTES);
    byPurpose.set(purpose, cache as ExactCache<unknown>);
  }
  const versions = scope.version ? await scope.version.get() : await readVersions(scope.db, scope.dialect);
  return cache.get(versions[scope.keyedBy ?? 'data'], key, compute, fresh, abandoned);
}
