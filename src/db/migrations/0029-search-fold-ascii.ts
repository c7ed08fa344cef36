import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';
import { foldStepsForPostgres } from '../search-fold.ts';

/**
 * PostgreSQL: the same folding, for ASCII text at a third of the cost. Folding was a large part of indexing a
 * post (docs/benchmarks.md, "Folding on PostgreSQL"): search_fold() took about 55 µs for a seeded post (two
 * normalizations and two regular expressions), and search_docs_tsv() called it twice per column.
 * - A text of ASCII alone (octet length equal to character length in UTF-8) is left as it is by NFKC, NFD and NFC and
 *   has no combining marks or ß: lower case and the blanking of non-alphanumerics give the same text as every step.
 *   About 20 µs a seeded post instead of 55 (four in five of them are ASCII).
 * - search_docs_tsv() folds each column once, for both its lexeme sets.
 * The results are unchanged, so nothing indexed is rewritten. SQLite needs nothing: its folding runs in JavaScript,
 * with its own fast path for Latin text (src/db/search-fold.ts).
 */
export function searchFoldAsciiMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql
        .raw(`CREATE OR REPLACE FUNCTION search_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
       SELECT CASE WHEN octet_length(t) = char_length(t) THEN regexp_replace(lower(t), '[^[:alnum:]]+', ' ', 'g')
       ELSE ${foldStepsForPostgres()} END
     $fn$`)
        .execute(db);
      await sql
        .raw(`CREATE OR REPLACE FUNCTION search_docs_tsv() RETURNS trigger LANGUAGE plpgsql AS $fn$
     DECLARE
       cfg regconfig := search_config(NEW.kind, NEW.language);
       title_fold text := search_fold(NEW.title);
       body_fold text := search_fold(NEW.body);
     BEGIN
       NEW.tsv := setweight(to_tsvector(cfg, title_fold), 'B')
         || setweight(to_tsvector('simple', title_fold), 'A')
         || setweight(to_tsvector(cfg, body_fold), 'B')
         || setweight(to_tsvector('simple', body_fold), 'A');
       RETURN NEW;
     END $fn$`)
        .execute(db);
    },
  };
}
