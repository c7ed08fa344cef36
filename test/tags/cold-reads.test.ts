import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, get } from './support.ts';

// Migration 0017-association-cold-reads: what keeps deep association pages and their counts off the table's rows
// on SQLite (docs/reliability.md, "Resource limits, ninth session").
for (const dialect of testDialects().filter((d) => d.name === 'sqlite')) {
  describe(`tag association reads that need no table row [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      bob = await t.createUser();
      await createPost(t, alice, '#cold #reads');
      await createPost(t, bob, '#cold private', { visibility: 'private' });
      await createPost(t, bob, '#cold friends', { visibility: 'friends' });
    });
    after(async () => t?.close());

    it('counts every association in the smallest index', async () => {
      const plan = await sql<{
        detail: string;
      }>`explain query plan select count(*) from tag_associations`.execute(t.ctx.db);
      assert.match(plan.rows.map((r) => r.detail).join('\n'), /COVERING INDEX tag_associations_rows/);
      // The lists' exact totals are still right, for a guest and for the owner of the private and friends posts.
      assert.equal((await get(t, '/tag-associations?limit=1')).count.total, 2);
      assert.equal((await get(t, '/tag-associations?limit=1', bob.token)).count.total, 4);
    });

    it('sorts by user and tag in indexes that hold the audience', async () => {
      for (const column of ['user_uuid', 'tag_uuid']) {
        const info = await sql<{
          name: string;
        }>`select name from pragma_index_info(${`tag_associations_${column}`})
          order by seqno`.execute(t.ctx.db);
        assert.deepEqual(
          info.rows.map((r) => r.name),
          [column, 'uuid', 'audience'],
        );
      }
      // Search walks judge a match's scope in this index (migration 0018-search-scope-index).
      const scope = await sql<{
        name: string;
      }>`select name from pragma_index_info('search_docs_scope') order by seqno`.execute(t.ctx.db);
      assert.deepEqual(
        scope.rows.map((r) => r.name),
        ['id', 'kind', 'visibility', 'language'],
      );
      const sorted = await get(t, '/tag-associations?sortby[user_uuid]=asc&sortby[tag_uuid]=asc', bob.token);
      const keys = sorted.data.map((a: { user_uuid: string }) => a.user_uuid);
      assert.deepEqual(keys, [...keys].sort());
    });
  });
}
