import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: username and hashtag prefixes are looked up as ranges of their keys, which the unique indexes on
 * username_key and (tag_type, name_key) serve. The keys have the "C" collation, so those indexes could always serve
 * a prefix: the text_pattern_ops copies of migration 0002 were redundant, and every new user and tag wrote them
 * (docs/search.md, "Prefix lookups planned once").
 */
export function searchPrefixRangesMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`DROP INDEX IF EXISTS search_users_username_prefix`.execute(db);
      await sql`DROP INDEX IF EXISTS search_tags_name_prefix`.execute(db);
    },
  };
}
