import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';
import { listIndexDdl } from './0004-list-indexes.ts';

/**
 * The tag association list sorts and filters by `updated_at` too (the spec: "Properties are those of the listed
 * resource", and every association carries it). One index in the shape of migration 0004's, so `sortby[updated_at]`
 * walks it instead of sorting the whole table: `(updated_at, uuid)`, the sort column NULLS FIRST on PostgreSQL as
 * there (the list engine orders `asc nulls first` or `desc nulls last`, a forward or a backward scan). No per-tag or
 * per-user variant: filtered by a tag or a user, the list reads that tag's or user's rows through their own index
 * and sorts them. One more entry per association written.
 */
export function associationUpdatedIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql
        .raw(listIndexDdl(dialect, 'tag_associations_updated_uuid', 'tag_associations', [], 'updated_at'))
        .execute(db);
      // SQLite's planner weighs an index by its row in sqlite_stat1, as migration 0004's ANALYZE gave the others;
      // PostgreSQL's statistics are per column and already hold updated_at.
      if (dialect !== 'postgres') await sql`ANALYZE tag_associations_updated_uuid`.execute(db);
    },
  };
}
