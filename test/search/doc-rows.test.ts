// A page's documents are read by uuid after the search found them (findDocRows). On PostgreSQL the reads of one
// event-loop turn share one statement per kind, so concurrent searches read each other's uuids in it: each must get
// its own rows, and nothing another caller may not see may reach them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { uuidv7 } from '../../src/db/time.ts';
import { findDocRows } from '../../src/modules/search/search-rows.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call } from './world.ts';

for (const dialect of testDialects()) {
  describe(`search: the rows of a page's documents [${dialect.name}]`, () => {
    let t: TestApp;
    let ana: TestUser;
    let ben: TestUser;
    const posts: string[] = [];
    let secret: string;

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      ana = await t.createUser('ana');
      ben = await t.createUser('ben');
      for (let i = 0; i < 3; i++)
        posts.push((await call(t, 'POST', '/posts', ana.token, { body: `zephyr ${i}` })).uuid);
      secret = (await call(t, 'POST', '/posts', ana.token, { body: 'zephyr secret', visibility: 'private' }))
        .uuid;
    });
    after(async () => t?.close());

    it('reads of one turn get their own rows, found ones only (one statement on PostgreSQL)', async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const ctx = { ...t.ctx, readDb: db };
      const [a, b] = [posts.slice(0, 2), [posts[2] as string, uuidv7()]];
      const [first, second] = await Promise.all([findDocRows(ctx, 'post', a), findDocRows(ctx, 'post', b)]);
      assert.deepEqual(first.map((r) => r.uuid).sort(), [...a].sort());
      assert.deepEqual(
        second.map((r) => r.uuid),
        [posts[2]],
      );
      assert.equal(nodes.length, dialect.name === 'postgres' ? 1 : 2);
      // A later turn reads again.
      assert.deepEqual(
        (await findDocRows(ctx, 'post', [secret])).map((r) => r.body),
        ['zephyr secret'],
      );
      assert.equal(nodes.length, dialect.name === 'postgres' ? 2 : 3);
    });

    it("concurrent searches each get their own page: the owner's private post, never another caller's", async () => {
      const search = (user: TestUser) =>
        call(t, 'GET', '/search?query=zephyr&order=created_at', user.token) as Promise<{ uuid: string }[]>;
      for (let round = 0; round < 5; round++) {
        const [own, other] = await Promise.all([search(ana), search(ben)]);
        // Newest first: the private post is the newest.
        assert.deepEqual(
          own.map((p) => p.uuid),
          [secret, ...[...posts].reverse()],
        );
        assert.deepEqual(
          other.map((p) => p.uuid),
          [...posts].reverse(),
        );
      }
    });
  });
}
