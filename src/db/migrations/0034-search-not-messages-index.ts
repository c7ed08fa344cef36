import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: the ids of every document but messages, so a walk of the other kinds in id order (`kind in (...)`
 * without messages, which the planner proves implies this index's predicate) steps over a block of messages instead
 * of testing each of its rows. The seeded world's 50,000 messages were newer than every other document on PostgreSQL
 * until its index was built in creation order (docs/search.md, "The index order is the creation order"): once
 * anything was posted after them, the recent window of a search held the block, and the window's walk tested 18,000
 * of its rows to find the 50 posts above it (8.7 ms for `the`, 0.1 ms through this index; docs/search.md, "The older
 * walk below a block of messages (PostgreSQL)"). About 30 MB on that world, built in under a second. SQLite needs
 * nothing: its walks follow the full-text index's lists of matching documents.
 */
export function searchNotMessagesIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE INDEX IF NOT EXISTS search_docs_not_messages ON search_docs (id) WHERE kind <> 'messages'`.execute(
        db,
      );
    },
  };
}
