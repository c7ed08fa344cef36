import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: where the index of recent documents starts. `search compact` builds a GIN index over the documents
 * with ids above `bound` (`search_docs_recent_tsv`) and moves it up as documents arrive; a search reads that small
 * index instead of walking the newest 30,000 documents row by row when a word is middling among them (docs/search.md,
 * "The index of recent documents (PostgreSQL)"). No row: no such index yet, and every search walks as before. One row
 * at most (`id = 1`). SQLite needs nothing: FTS5 seeks its doclists to a rowid.
 */
export function searchRecentIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE TABLE search_recent (id smallint PRIMARY KEY CHECK (id = 1), bound bigint NOT NULL)`.execute(
        db,
      );
    },
  };
}
