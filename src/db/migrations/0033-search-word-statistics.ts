import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/** How many common lexemes' statistics are kept, over ten: 10 times PostgreSQL's default of 100. */
export const WORD_STATISTICS_TARGET = 1000;

/**
 * PostgreSQL: statistics of 10,000 common lexemes of the search index (the default keeps 1,000), so any lexeme left
 * out of the list is known to be rare: on the 1,000,000-post world the smallest share listed falls from 0.27% of the
 * documents (3,900) to 0.0153% (223), under the ranked candidates of a search (docs/search.md, "Rare words by the
 * statistics"). They are kept on an expression no query uses, `tsvector_to_array(tsv)` (its elements are the
 * lexemes), not on the `tsv` column itself: the planner reads a column's list each time it plans a match on it, and
 * at 10,000 lexemes planning a search statement took 0.8-1.0 ms instead of 0.15-0.3. ANALYZE then samples 300,000
 * rows instead of 30,000; the table is analyzed here so a grown database has its list at once. SQLite is left as it
 * is.
 */
export function searchWordStatisticsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE STATISTICS IF NOT EXISTS search_docs_words ON (tsvector_to_array(tsv)) FROM search_docs`.execute(
        db,
      );
      await sql`ALTER STATISTICS search_docs_words SET STATISTICS ${sql.lit(WORD_STATISTICS_TARGET)}`.execute(
        db,
      );
      await sql`ANALYZE search_docs`.execute(db);
    },
  };
}
