import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: a signed-in caller's messages in id order, from either side (docs/search.md, "Signed-in searches on
 * PostgreSQL"). A search of the caller's messages read the GIN posting list of every word (28,819 entries of
 * `love:*`, 35-45 ms) or every document the caller owns (search_docs_owner holds posts and comments too: 12,552
 * for bench_user) to keep the few messages among them. These partial indexes hold messages only, ordered by id
 * per sender and per recipient, so the search walks the caller's messages newest first and stops at its limit.
 * SQLite needs nothing: its FTS5 walk filters kinds inside the index.
 */
export function searchMessagePartiesMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE INDEX IF NOT EXISTS search_docs_message_owner
        ON search_docs (owner_uuid, id) WHERE kind = 'messages'`.execute(db);
      await sql`CREATE INDEX IF NOT EXISTS search_docs_message_recipient
        ON search_docs (recipient_uuid, id) WHERE kind = 'messages'`.execute(db);
    },
  };
}
