import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL keeps stemmed and plain lexemes in one tsvector; a query without a stemming language must match the
 * plain ones only (as SQLite's plain FTS5 table does), so plain lexemes get weight A and stemmed ones weight B and
 * the query restricts plain terms to A. SQLite needs nothing.
 */
export function searchPlainWeightMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql
        .raw(`CREATE OR REPLACE FUNCTION search_docs_tsv() RETURNS trigger LANGUAGE plpgsql AS $fn$
     DECLARE cfg regconfig := search_config(NEW.kind, NEW.language);
     BEGIN
       NEW.tsv := setweight(to_tsvector(cfg, search_fold(NEW.title)), 'B')
         || setweight(to_tsvector('simple', search_fold(NEW.title)), 'A')
         || setweight(to_tsvector(cfg, search_fold(NEW.body)), 'B')
         || setweight(to_tsvector('simple', search_fold(NEW.body)), 'A');
       RETURN NEW;
     END $fn$`)
        .execute(db);
      // The BEFORE UPDATE OF title trigger recomputes each document's tsvector.
      await sql`UPDATE search_docs SET title = title`.execute(db);
    },
  };
}
