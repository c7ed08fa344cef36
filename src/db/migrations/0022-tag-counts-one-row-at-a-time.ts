import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

// Spelled out, not imported: a migration keeps doing what it did when it shipped (as 0016).
const TAG_COUNT_DELTAS = 'social.tag_count_deltas';

/**
 * PostgreSQL: the commit-time trigger of 0016 adds each staged delta with one primary-key UPDATE per tag, in uuid
 * order, instead of one UPDATE joined to a locking CTE over the JSON. Under `POST /posts` (three tags a post, 50 at
 * a time) that trigger was a quarter of PostgreSQL's CPU: each commit planned and started the joined statement anew
 * (its plan was not cached: a CTE over `jsonb_array_elements`), and a row another writer had just updated sent the
 * join through EvalPlanQual. A static single-row UPDATE keeps its plan for the session and rechecks one row. The
 * lock order is the same (uuid order), so two writers still cannot deadlock.
 */
export function tagCountsOneRowAtATimeMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql
        .raw(`CREATE OR REPLACE FUNCTION tag_counts_at_commit() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  staged text := current_setting('${TAG_COUNT_DELTAS}', true);
  d record;
BEGIN
  IF staged IS NULL OR staged = '' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('${TAG_COUNT_DELTAS}', '', true);
  FOR d IN
    SELECT e->>0 AS uuid, sum((e->>1)::integer) AS delta
    FROM jsonb_array_elements(staged::jsonb) e
    GROUP BY 1 HAVING sum((e->>1)::integer) <> 0
    ORDER BY 1
  LOOP
    UPDATE tags SET associations_count = associations_count + d.delta WHERE uuid = d.uuid;
  END LOOP;
  RETURN NULL;
END
$fn$`)
        .execute(db);
    },
  };
}
