import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

// The transaction-local setting where a PostgreSQL writer stages its deltas (adjustTagCounts). Spelled out here,
// not imported: a migration keeps doing what it did when it shipped.
const TAG_COUNT_DELTAS = 'social.tag_count_deltas';

/**
 * PostgreSQL: tag counts are added at commit. A popular tag's row is one that every writer of it must lock to count
 * its association, and a lock taken inside a transaction is held through every statement after it and the commit's
 * round trip: 17.8 ms of lock wait per `POST /posts` with the same three tags, 50 at a time, the writes in single
 * file at 250/s. The writer now stages its deltas in a transaction-local setting (a JSON array of [tag uuid, delta]
 * pairs, cleared by PostgreSQL when the transaction ends, so nothing is left to vacuum), and a deferred constraint
 * trigger on tag_associations adds them during COMMIT: the first firing of the transaction applies them all, in uuid
 * order so two writers cannot deadlock, and the others find nothing staged. The rows stay locked only for that
 * update and the commit's WAL flush. Every change of counts comes with a change of associations, which queues the
 * trigger. SQLite runs one write transaction at a time and keeps counting in place.
 */
export function tagCountsAtCommitMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql
        .raw(`CREATE OR REPLACE FUNCTION tag_counts_at_commit() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  staged text := current_setting('${TAG_COUNT_DELTAS}', true);
BEGIN
  IF staged IS NULL OR staged = '' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('${TAG_COUNT_DELTAS}', '', true);
  WITH d AS (
    SELECT e->>0 AS uuid, sum((e->>1)::integer) AS delta
    FROM jsonb_array_elements(staged::jsonb) e
    GROUP BY 1
  ), locked AS (
    SELECT t.uuid FROM tags t WHERE t.uuid IN (SELECT d.uuid FROM d WHERE d.delta <> 0)
    ORDER BY t.uuid FOR NO KEY UPDATE
  )
  UPDATE tags t SET associations_count = t.associations_count + d.delta
  FROM d WHERE t.uuid = d.uuid AND t.uuid IN (SELECT uuid FROM locked);
  RETURN NULL;
END
$fn$`)
        .execute(db);
      await sql`DROP TRIGGER IF EXISTS tag_associations_counts ON tag_associations`.execute(db);
      await sql`CREATE CONSTRAINT TRIGGER tag_associations_counts
        AFTER INSERT OR UPDATE OR DELETE ON tag_associations
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION tag_counts_at_commit()`.execute(db);
    },
  };
}
