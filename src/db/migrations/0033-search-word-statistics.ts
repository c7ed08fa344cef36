import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/** The statistics target of search_docs.tsv: 10 times as many common lexemes listed as PostgreSQL's default of 100. */
export const TSV_STATISTICS_TARGET = 1000;

/**
 * PostgreSQL: keeps statistics of ten times as many common lexemes of the search index (10,000 instead of 1,000),
 * so any lexeme left out of the list is known to be rare: on the 1,000,000-post world the smallest share listed
 * falls from 0.27% of the documents (3,900) to a few hundred documents, under the ranked candidates of a search
 * (docs/search.md, "Rare words by the statistics"). ANALYZE then samples 300,000 rows instead of 30,000; the column
 * is analyzed here so a grown database has its list at once. SQLite is left as it is.
 */
export function searchWordStatisticsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`ALTER TABLE search_docs ALTER COLUMN tsv SET STATISTICS ${sql.lit(TSV_STATISTICS_TARGET)}`.execute(
        db,
      );
      await sql`ANALYZE search_docs (tsv)`.execute(db);
    },
  };
}
