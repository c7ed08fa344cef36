import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { Database, Dialect } from './db/database.ts';
import type { EventBus } from './events/bus.ts';

/** What services need: the database (and its reader), its engine, the configuration and the event bus. */
export interface Context {
  db: Kysely<Database>;
  /** Heavy reads outside transactions (search, list pages): SQLite reader threads, or db itself (see connect.ts). */
  readDb: Kysely<Database>;
  dialect: Dialect;
  config: Config;
  bus: EventBus;
}
