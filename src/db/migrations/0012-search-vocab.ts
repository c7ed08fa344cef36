import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * SQLite: the words of the plain FTS5 index, for expanding a long last word (docs/search.md, "Long prefixes"). FTS5
 * has prefix indexes up to 5 characters; a longer prefix query merges the doclist of every word with that start
 * before it returns a row, on every statement of a search. `fts5vocab` reads the index's own terms, so the few words
 * a long prefix stands for are found once per search and matched as whole words. It stores nothing.
 * PostgreSQL needs nothing: its walks check each row's tsvector.
 */
export function searchVocabMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await sql`CREATE VIRTUAL TABLE IF NOT EXISTS search_fts_vocab USING fts5vocab(search_fts, row)`.execute(
        db,
      );
    },
  };
}
