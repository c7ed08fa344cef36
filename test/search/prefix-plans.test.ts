import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import {
  findHashtagsByPrefix,
  findUsersByUsernamePrefix,
} from '../../src/modules/search/search.repository.ts';
import { recordingQueries, startTestApp, type TestApp, testDialects } from '../helper.ts';

for (const dialect of testDialects()) {
  describe(`prefix lookups as prepared key ranges [${dialect.name}]`, () => {
    let t: TestApp;
    let viewer: string;

    before(async () => {
      t = await startTestApp(dialect);
      viewer = (await t.createUser('prefix_viewer')).uuid;
    });
    after(async () => t?.close());

    /** The recorded username and hashtag lookups, compiled. */
    async function lookups() {
      const { db, nodes } = recordingQueries(t.ctx.db);
      await findUsersByUsernamePrefix(db, 'pre', { offset: 0, limit: 10 });
      await findUsersByUsernamePrefix(db, 'pre', { friendsOf: viewer, offset: 0, limit: 10 });
      await findHashtagsByPrefix(db, viewer, 'pre', { column: 'relevance', direction: 'desc' }, 0, 10);
      await findHashtagsByPrefix(db, null, 'pre', { column: 'created_at', direction: 'asc' }, 0, 10);
      return nodes.map((node) => db.getExecutor().compileQuery(node, createQueryId()));
    }

    it('are marked to be prepared, the prefix bound as the range of its keys', async () => {
      for (const q of await lookups()) {
        assert.match(q.sql, /^select \/\* prepared \*\//, q.sql);
        assert.doesNotMatch(q.sql, / like /i, q.sql);
        assert.ok(q.parameters.includes('pre') && q.parameters.includes('pre\u{10FFFF}'), q.sql);
      }
    });

    it('PostgreSQL: their generic plans read the key index as a range, whatever prefix is bound', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const compiled = await lookups();
      const text = (v: unknown) => `'${String(v).replaceAll("'", "''")}'`;
      const literal = (v: unknown) => (typeof v === 'number' ? String(v) : text(v));
      await t.ctx.db.connection().execute(async (c) => {
        // The test tables fit a page or two, where a sequential scan wins whatever the plan could use.
        await sql`set plan_cache_mode = force_generic_plan`.execute(c);
        await sql`set enable_seqscan = off`.execute(c);
        for (const [i, q] of compiled.entries()) {
          await sql.raw(`prepare prefix_lookup_${i} as ${q.sql}`).execute(c);
          const args = q.parameters.map(literal).join(', ');
          const explained = await sql<{ 'QUERY PLAN': string }>`${sql.raw(
            `explain execute prefix_lookup_${i}(${args})`,
          )}`.execute(c);
          const plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n');
          // A bound LIKE pattern could only be a filter of a generic plan (`~~`); a range is an index condition.
          assert.doesNotMatch(plan, /~~/, plan);
          if (q.sql.includes('from users')) {
            // The username order is the key index's: the range bounds its scan.
            assert.match(plan, /Index Cond: \(\(username_key >= \$1\) AND \(username_key < \$2\)\)/, plan);
            assert.doesNotMatch(plan, /Seq Scan on users/, plan);
          }
        }
        await sql`deallocate all`.execute(c);
        await sql`reset enable_seqscan`.execute(c);
        await sql`reset plan_cache_mode`.execute(c);
      });
    });
  });
}
