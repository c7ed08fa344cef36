import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * PostgreSQL: username and hashtag prefixes are looked up as ranges of their keys (binary collation), which the
 * unique indexes on username_key and (tag_type, name_key) serve; LIKE needed the text_pattern_ops copies of migration
 * 0002, which every new user and tag still wrote (docs/search.md, "Prefix lookups planned once").
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
