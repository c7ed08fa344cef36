import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * The daily cap check (countNettingAddRecordsSince) needs only today's `add` records that earned points. PostgreSQL
 * fetched every record of the day through karma_user_event_created (a bitmap scan, then a sort for the DISTINCT,
 * before the LIMIT could stop anything): past the cap each write adds a 0-point record, so a busy author's check
 * grew with every write (3 ms at 2,200 records of the day, rising). This partial index holds only the records that
 * earned points: at most the cap (plus those taken back) per user, rule and day. SQLite needs nothing: it walks the
 * same index in order and stops at the LIMIT, and the records that earned points come first in a day.
 */
export function karmaNettingIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE INDEX IF NOT EXISTS karma_netting_adds
        ON karma (user_uuid, event, created_at, source_uuid, uuid)
        WHERE karma_type = 'add' AND points > 0`.execute(db);
    },
  };
}
