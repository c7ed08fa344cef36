import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { Database, Dialect } from './db/database.ts';
import type { ReadCacheScope, RequestVersion } from './db/exact-cache.ts';
import type { ReadGate } from './db/read-gate.ts';
import type { EventBus } from './events/bus.ts';

/** What services need: the database (and its reader), its engine, the configuration and the event bus. */
export interface Context {
  db: Kysely<Database>;
  /** Heavy reads outside transactions (search, list pages): SQLite reader threads, or db itself (see connect.ts). */
  readDb: Kysely<Database>;
  dialect: Dialect;
  config: Config;
  bus: EventBus;
  /** PostgreSQL in the API: admits the computation of search answers and list pages a few at a time (heavyRead). */
  readGate?: ReadGate;
}

/**
 * Computes a search answer or a list page through the context's read gate, if it has one; `abandoned` says whether
 * the caller has gone (ReadGate.run). Never nested: a read admitted must not wait for another slot.
 */
export function heavyRead<T>(ctx: Context, read: () => Promise<T>, abandoned?: () => boolean): Promise<T> {
  return ctx.readGate ? ctx.readGate.run(read, abandoned) : read();
}

/**
 * The exact read cache of token checks and tag reads (src/db/exact-cache.ts), sized by READ_CACHE_ENTRIES and
 * READ_CACHE_MB; with a request's `version`, its cached reads share one version read.
 */
export function readCacheScope(ctx: Context, version?: RequestVersion | null): ReadCacheScope {
  return {
    db: ctx.db,
    dialect: ctx.dialect,
    capacity: ctx.config.READ_CACHE_ENTRIES,
    maxBytes: ctx.config.READ_CACHE_MB * 2 ** 20,
    version,
  };
}

/**
 * Whether write transactions lock the rows they decide on (`FOR UPDATE`, `FOR KEY SHARE`, ...). PostgreSQL runs them
 * at once, so two that read one row could both act on what they read (docs/decisions.md, "rows decided on are
 * locked"); SQLite runs one write transaction at a time and has no such clauses.
 */
export function locksRows(ctx: Pick<Context, 'dialect'>): boolean {
  return ctx.dialect === 'postgres';
}
