import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * SQLite: each side of a user's connections is read from an index that holds every listed column (GET /connections,
 * docs/reliability.md, "Resource limits, tenth session"). The list is the OR of two sides, so whatever the sort it
 * gathers both sides' rows and sorts them: from `(side, created_at, uuid)` that is a random read of the table for
 * each of a popular user's 8,600 connections, 0.5-1.5 s for a deep page once the machine has taken its page cache
 * back. These replace those two indexes with ones that carry the other listed columns too (everything but
 * pair_key), so the list and its count read two runs of index entries: 12 ms from disk. Connections are written
 * rarely, and each write still maintains two indexes. PostgreSQL is left as it is.
 */
export function connectionCoverMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await sql`CREATE INDEX IF NOT EXISTS connections_user_cover
        ON connections (user_uuid, created_at, uuid, status, updated_at, target_user_uuid)`.execute(db);
      await sql`CREATE INDEX IF NOT EXISTS connections_target_cover
        ON connections (target_user_uuid, created_at, uuid, status, updated_at, user_uuid)`.execute(db);
      await sql`DROP INDEX IF EXISTS connections_user_created_uuid`.execute(db);
      await sql`DROP INDEX IF EXISTS connections_target_created_uuid`.execute(db);
      await sql`ANALYZE connections`.execute(db);
    },
  };
}
