import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/** Kinds with a GIN index of their own (PostgreSQL): spread thinly among posts' ids, so id-ordered walks cross many. */
export const KIND_GIN_KINDS = ['comment', 'user'] as const;

/**
 * PostgreSQL: a GIN index per kind that shares its id range with many other documents (comments among posts) or is
 * searched alone often (users). A word rare in comments, searched in the comment column of `/search/types`, was
 * walked backwards through every id below the recent window, posts included (160,000 rows for 170 comments with
 * `coffee`, 56-175 ms); through the main GIN index it rechecks every match of every kind (27,636 for `coffee`). This
 * one holds comments only: 1,566 matches, 14 ms (docs/search.md, "Rare words in one kind on PostgreSQL"). SQLite
 * needs nothing: its FTS5 walk filters kinds inside the index.
 */
export function searchKindGinMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      for (const kind of KIND_GIN_KINDS) {
        await sql
          .raw(
            `CREATE INDEX IF NOT EXISTS search_docs_tsv_${kind} ON search_docs USING gin (tsv) WHERE kind = '${kind}'`,
          )
          .execute(db);
      }
    },
  };
}
