import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: a GIN index of the messages' words together with their two parties, so a signed-in search of the
 * caller's messages intersects the words with the caller inside the index, as SQLite's FTS5 does since migration 0020
 * (docs/search.md, "Messages by words and party (PostgreSQL)"). Walking the caller's messages newest first through
 * the party indexes of migration 0011 tested each one's tsvector: `love` as bench_user read all 1,187 received
 * messages to keep 19 (3.7 ms, against 0.7 through this index). A party is the lexeme `u` + its uuid without dashes,
 * lower case (partyToken in search.query.ts); the function is immutable, so the index and the query write the same
 * expression. Messages only (50,000 in a seeded world: 12 MB, built in about 2 s). SQLite needs nothing.
 */
export function searchMessageWordsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE OR REPLACE FUNCTION search_message_parties(owner text, recipient text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT array_to_tsvector(array_remove(ARRAY[
          'u' || lower(replace(owner, '-', '')), 'u' || lower(replace(recipient, '-', ''))], NULL)) $$`.execute(
        db,
      );
      await sql`CREATE INDEX IF NOT EXISTS search_docs_message_words ON search_docs
        USING gin ((tsv || search_message_parties(owner_uuid, recipient_uuid))) WHERE kind = 'messages'`.execute(
        db,
      );
    },
  };
}
