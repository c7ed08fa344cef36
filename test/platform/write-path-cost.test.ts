// The write path must not get slower with what a busy author wrote before. The karma daily-cap check ran once per
// post and, on PostgreSQL, read every karma record of the author's day before its LIMIT applied (a bitmap scan and a
// sort for the DISTINCT): thousands of rows for an author past the cap. Migration 0008 gave it a partial index of
// the records that earned points; this checks what the engine actually reads, with the real query, for an author
// with a day of 0-point records and a long history of records that earned points under another rule.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { nettingAddRecordsCount } from '../../src/modules/karma/karma.repository.ts';
import { body, testDialects } from '../helper.ts';
import { type LoggedApp, startLoggedApp, UNLIMITED } from '../reliability/support.ts';

const ZERO_POINT_RECORDS = 3000;
const CAP = 50;

/** Rows each plan node of a PostgreSQL EXPLAIN ANALYZE produced, with the index it read. */
function scans(plan: Record<string, unknown>, out: { index: string; rows: number }[] = []) {
  if (typeof plan['Node Type'] === 'string' && /Scan/.test(plan['Node Type'] as string)) {
    out.push({
      index: String(plan['Index Name'] ?? plan['Relation Name'] ?? plan['Node Type']),
      rows: Number(plan['Actual Rows']) * Number(plan['Actual Loops'] ?? 1),
    });
  }
  for (const child of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) scans(child, out);
  return out;
}

for (const dialect of testDialects()) {
  describe(`karma daily-cap check past the cap [${dialect.name}]`, () => {
    let t: LoggedApp;
    let author: { uuid: string; token: string };
    const since = () => {
      const d = new Date();
      d.setUTCHours(0, 0, 0, 0);
      return d.toISOString();
    };

    before(async () => {
      t = await startLoggedApp(dialect, UNLIMITED);
      author = await t.createUser();
      // The cap's worth of posts through the API, then a day's worth of 0-point records behind them.
      for (let i = 0; i < CAP; i++) {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: author.token,
          payload: { body: `p${i}` },
        });
        assert.equal(res.statusCode, 201, res.body);
      }
      // Also a history that earned points under another rule, so no other index of the author's records is short.
      const now = nowIso();
      const yesterday = new Date(Date.now() - 86_400_000).toISOString();
      const record = (event: string, points: number, at: string) => ({
        uuid: uuidv7(),
        user_uuid: author.uuid,
        event,
        target_uuid: uuidv7(),
        target_type: 'post',
        karma_type: 'add',
        points,
        source_uuid: uuidv7(),
        created_at: at,
        updated_at: at,
      });
      const rows = [
        ...Array.from({ length: ZERO_POINT_RECORDS }, () => record('postCreated', 0, now)),
        ...Array.from({ length: ZERO_POINT_RECORDS }, () => record('emotionReceived', 1, yesterday)),
      ];
      for (let i = 0; i < rows.length; i += 500) {
        await t.ctx.db
          .insertInto('karma')
          .values(rows.slice(i, i + 500))
          .execute();
      }
      await sql.raw(dialect.name === 'postgres' ? 'ANALYZE karma' : 'ANALYZE').execute(t.ctx.db);
    });
    after(async () => t?.close());

    it('still counts the cap: the next post earns 0 points', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: author.token,
        payload: { body: 'one more' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const record = await t.ctx.db
        .selectFrom('karma')
        .select('points')
        .where('source_uuid', '=', body(res).data.uuid)
        .executeTakeFirstOrThrow();
      assert.equal(Number(record.points), 0);
      const n = await nettingAddRecordsCount(
        t.ctx.db,
        author.uuid,
        'postCreated',
        since(),
        CAP,
      ).executeTakeFirstOrThrow();
      assert.equal(Number(n.n), CAP);
    });

    it('reads about the cap, not the whole day, on PostgreSQL', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const compiled = nettingAddRecordsCount(t.ctx.db, author.uuid, 'postCreated', since(), CAP).compile();
      const explained = await t.ctx.db.executeQuery<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>({
        ...compiled,
        sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${compiled.sql}`,
      });
      const plan = explained.rows[0]?.['QUERY PLAN'][0]?.Plan;
      assert.ok(plan, 'a plan');
      const outer = scans(plan).filter((s) => s.index !== 'karma_source_user');
      const read = outer.reduce((sum, s) => sum + s.rows, 0);
      assert.ok(
        read <= CAP * 2,
        `the check read ${read} rows of a day of ${CAP + ZERO_POINT_RECORDS + 1}: ${JSON.stringify(outer)}`,
      );
    });
  });
}
