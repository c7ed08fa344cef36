import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

// Spelled out, not imported: a migration keeps doing what it did when it shipped. Each compensation and its rule.
const RULE_OF_COMPENSATION: [compensation: string, rule: string][] = [
  ['postDeleted', 'postCreated'],
  ['commentDeleted', 'commentCreated'],
  ['mediaDeleted', 'mediaCreated'],
  ['networkDeleted', 'networkCreated'],
  ['connectionDeleted', 'connectionConfirmed'],
  ['emotionRemoved', 'emotionReceived'],
];

/**
 * Karma records remember the rule that wrote them (`rule`), which an edit of the record never changes. The daily
 * cap counted today's records by `event`, which the owner may edit: renaming a paying `postCreated` record to
 * `postDeleted` (or to another rule's event) kept its points but took it out of the count, so the next post paid
 * again, without end. The cap now counts by `rule`, and the partial index of records that earned points is keyed by
 * it. Existing records take the rule of their event (an event already renamed by hand cannot be traced back).
 */
export function karmaRuleMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`ALTER TABLE karma ADD COLUMN rule text NOT NULL DEFAULT ''`.execute(db);
      const cases = RULE_OF_COMPENSATION.map(([c, r]) => `WHEN '${c}' THEN '${r}'`).join(' ');
      await sql.raw(`UPDATE karma SET rule = CASE event ${cases} ELSE event END`).execute(db);
      await sql`DROP INDEX IF EXISTS karma_netting_adds`.execute(db);
      // As 0008/0010 had it, keyed by rule; SQLite's copy covers karma_type and points so it never reads the table.
      const covered = dialect === 'postgres' ? '' : ', karma_type, points';
      await sql
        .raw(`CREATE INDEX karma_netting_adds
          ON karma (user_uuid, rule, created_at, source_uuid, uuid${covered})
          WHERE karma_type = 'add' AND points > 0`)
        .execute(db);
      // SQLite analyses one index by name (a second, where the table's every index took far longer).
      await sql.raw(dialect === 'postgres' ? 'ANALYZE karma' : 'ANALYZE karma_netting_adds').execute(db);
    },
  };
}
