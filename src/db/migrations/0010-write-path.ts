import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';
import { audienceOf } from './0006-tag-audience.ts';

/**
 * The write path of POST /posts and friends (docs/decisions.md, "Write throughput"):
 *
 * - The karma daily-cap check reads only indexes. SQLite gets the partial index of records that earned points that
 *   PostgreSQL has had since 0008, covering (karma_type and points appended: SQLite reads a partial index without
 *   the table only when every column the query names is in it). Both engines get a partial index of `subtract`
 *   records, from which the check takes once per query the few sources that were taken back, instead of probing
 *   every counted record's source. Each index is analysed on its own (a second or less) so SQLite's planner weighs
 *   it at once; a new index without statistics lost to the old full one.
 * - SQLite: the association insert trigger of 0006 rewrote every new row (and its entries in four indexes) to copy
 *   the target's audience. Writers that know the audience (tag extraction from a new post) now give it; the trigger
 *   still computes it and rewrites the row only when the given copy differs (a writer that gave none, or a wrong
 *   one), so the copy stays right whatever the write path.
 * - PostgreSQL: three indexes that others with the same leading columns serve fully: (target_uuid) under
 *   (target_uuid, uuid); (created_at, uuid) under (created_at NULLS FIRST, uuid), and karma (user_uuid, created_at)
 *   under (user_uuid, created_at NULLS FIRST, uuid). 0004 kept them for plain `created_at desc` orders, which no
 *   query uses any more (lists order `desc nulls last`, the newest associations of a tag too). Every association
 *   and karma insert maintained them.
 */
export function writePathMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const statements = dialect === 'postgres' ? postgresStatements() : sqliteStatements();
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}

const SUBTRACTS_INDEX = `CREATE INDEX IF NOT EXISTS karma_subtracts ON karma (user_uuid, created_at, source_uuid)
  WHERE karma_type = 'subtract'`;

/** The row (audience, owner, other) a new association's target gives, as 0006's trigger computes it. */
const TARGET_AUDIENCE = `SELECT s.audience, s.owner, s.other FROM (
      SELECT ${audienceOf('p.visibility')} AS audience, p.user_uuid AS owner, NULL AS other, 0 AS r FROM posts p
        WHERE new.target_type = 'post' AND p.uuid = new.target_uuid
      UNION ALL SELECT ${audienceOf('p.visibility')}, p.user_uuid, NULL, 0 FROM comments c
        JOIN posts p ON p.uuid = c.post_uuid WHERE new.target_type = 'comment' AND c.uuid = new.target_uuid
      UNION ALL SELECT ${audienceOf('m.visibility')}, m.user_uuid, NULL, 0 FROM media m
        WHERE new.target_type = 'media' AND m.uuid = new.target_uuid
      UNION ALL SELECT 'parties', g.user_uuid, g.recipient_uuid, 0 FROM messages g
        WHERE new.target_type = 'messages' AND g.uuid = new.target_uuid
      UNION ALL SELECT 'parties', k.user_uuid, k.target_user_uuid, 0 FROM connections k
        WHERE new.target_type = 'connection' AND k.uuid = new.target_uuid
      UNION ALL SELECT 'public', u.uuid, NULL, 0 FROM users u WHERE new.target_type = 'user' AND u.uuid = new.target_uuid
      UNION ALL SELECT 'public', n.user_uuid, NULL, 0 FROM networks n
        WHERE new.target_type = 'network' AND n.uuid = new.target_uuid
      UNION ALL SELECT 'none', NULL, NULL, 1
    ) s ORDER BY s.r LIMIT 1`;

function sqliteStatements(): string[] {
  return [
    `CREATE INDEX IF NOT EXISTS karma_netting_adds
       ON karma (user_uuid, event, created_at, source_uuid, uuid, karma_type, points)
       WHERE karma_type = 'add' AND points > 0`,
    SUBTRACTS_INDEX,
    'ANALYZE karma_netting_adds',
    'ANALYZE karma_subtracts',
    'DROP TRIGGER tag_audience_ai',
    // Row values compare with IS NOT, NULL-safely: (x, NULL, NULL) against the target's (x, NULL, NULL) is equal.
    `CREATE TRIGGER tag_audience_ai AFTER INSERT ON tag_associations
       WHEN (new.audience, new.audience_owner, new.audience_other) IS NOT (${TARGET_AUDIENCE}) BEGIN
       UPDATE tag_associations SET (audience, audience_owner, audience_other) = (${TARGET_AUDIENCE})
         WHERE rowid = new.rowid;
     END`,
  ];
}

function postgresStatements(): string[] {
  return [
    SUBTRACTS_INDEX,
    'DROP INDEX IF EXISTS tag_associations_target',
    'DROP INDEX IF EXISTS tag_associations_created',
    'DROP INDEX IF EXISTS karma_user_created',
  ];
}
