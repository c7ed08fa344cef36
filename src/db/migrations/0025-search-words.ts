import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: the lexemes of the search index (`search_words`), so that a long last word can be matched as the
 * indexed words it starts instead of as a prefix (docs/search.md, "Long prefixes"). GIN answers `morning:*` by
 * reading every posting list of the words it starts into a bitmap first: `coffee & morning:*` took 9-11 ms on the
 * 1,000,000-post world, `coffee & (morning | mornings)` 1.1 ms. SQLite reads the same list from FTS5's own vocabulary
 * (migration 0012).
 *
 * The table holds every lexeme any document ever had: a statement-level trigger adds the new rows' lexemes it does
 * not hold yet after each insert or update of search_docs, and nothing removes them. A word no document holds any
 * more only makes the expanded query name one more lexeme, which matches nothing, so the answers stay those of the
 * prefix. No unique key: two writers adding the same new word at once would wait on each other's uncommitted entry,
 * and a transaction writing documents in several statements (the seed's batches) deadlocked on two such words; here
 * both add it, and the lookup reads distinct words. The "C" collation lets `like 'prefix%'` read the index's range.
 */
export function searchWordsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE TABLE search_words (word text COLLATE "C" NOT NULL)`.execute(db);
      await sql`CREATE INDEX search_words_word ON search_words (word)`.execute(db);
      await sql
        .raw(`CREATE FUNCTION search_words_add() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO search_words (word)
  SELECT DISTINCT w.word FROM new_docs d, unnest(tsvector_to_array(d.tsv)) AS w(word)
  WHERE NOT EXISTS (SELECT 1 FROM search_words s WHERE s.word = w.word);
  RETURN NULL;
END
$fn$`)
        .execute(db);
      await sql`CREATE TRIGGER search_words_ai AFTER INSERT ON search_docs REFERENCING NEW TABLE AS new_docs
        FOR EACH STATEMENT EXECUTE FUNCTION search_words_add()`.execute(db);
      await sql`CREATE TRIGGER search_words_au AFTER UPDATE ON search_docs REFERENCING NEW TABLE AS new_docs
        FOR EACH STATEMENT EXECUTE FUNCTION search_words_add()`.execute(db);
      await sql`INSERT INTO search_words (word)
        SELECT DISTINCT w.word FROM search_docs d, unnest(tsvector_to_array(d.tsv)) AS w(word)`.execute(db);
    },
  };
}
