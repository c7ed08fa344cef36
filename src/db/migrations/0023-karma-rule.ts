import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * Karma records remember the rule that wrote them (`rule`), which an edit of the record never changes. The daily
 * cap counted today's records by `event`, which the owner may edit: renaming a paying `postCreated` record to
 * `postDeleted` (or to another rule's event) kept its points but took it out of the count, so the next post paid
 * again, without end. The cap now counts by `coalesce(rule, event)`, and the partial index of records that earned
 * points is keyed by that expression.
 *
 * Records written before have no rule (NULL: their event, unless the owner edits them, which pins it first). Not
 * filled in here: on PostgreSQL, updating every record of a grown database rewrote each row and its entry in every
 * karma index (2.2 million records ran past 10 minutes), where adding a nullable column changes no row.
 */
export function karmaRuleMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`ALTER TABLE karma ADD COLUMN rule text`.execute(db);
      await sql`DROP INDEX IF EXISTS karma_netting_adds`.execute(db);
      // As 0008/0010 had it, keyed by the rule; SQLite's copy covers karma_type and points so it never reads the table.
      const covered = dialect === 'postgres' ? '' : ', karma_type, points';
      await sql
        .raw(`CREATE INDEX karma_netting_adds
          ON karma (user_uuid, (coalesce(rule, event)), created_at, source_uuid, uuid${covered})
          WHERE karma_type = 'add' AND points > 0`)
        .execute(db);
      // SQLite analyses one index by name (a second, where the table's every index took far longer).
      await sql.raw(dialect === 'postgres' ? 'ANALYZE karma' : 'ANALYZE karma_netting_adds').execute(db);
    },
  };
}
