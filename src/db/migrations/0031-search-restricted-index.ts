import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * The visibilities the index holds. A query that reads it (INDEXED BY) must state this same condition, item for item
 * in this order, or SQLite finds no plan: restrictedVisibility() writes it.
 */
export const RESTRICTED_VISIBILITIES = ['friends', 'private'] as const;

/** The condition of the index on the visibility (of a row alias, if given), as a query that reads it must state it. */
export function restrictedVisibility(row?: string): string {
  const column = row ? `${row}.visibility` : 'visibility';
  return `${column} IN (${RESTRICTED_VISIBILITIES.map((v) => `'${v}'`).join(', ')})`;
}

/**
 * SQLite: the friends-only and private documents' owners in an index of their own, (id, visibility, owner_uuid) of
 * those documents alone (docs/search.md, "Signed-in deep pages (SQLite)"). A signed-in caller's deep page finds such
 * matches in the full-text index (their visibility tokens, migration 0030) and checks only them against the caller;
 * from the table each check was a read of a row carrying its whole text, scattered over the file. This index is
 * 11 MB for the 1,000,000-post world's 201,011 such documents (0.6 s to build), and only writes of such documents
 * touch it. PostgreSQL checks the scope of each row it reads in its own plans and is left as it is.
 */
export function searchRestrictedIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await sql
        .raw(`CREATE INDEX IF NOT EXISTS search_docs_restricted ON search_docs (id, visibility, owner_uuid)
          WHERE ${restrictedVisibility()}`)
        .execute(db);
      // Its statistics beside the others' (migration 0018 analysed the table), for the planner's choices.
      await sql`ANALYZE search_docs_restricted`.execute(db);
    },
  };
}
