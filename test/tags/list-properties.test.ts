// The list rules of the spec that reach past the common cases: every property of a tag association is one to sort
// and filter by (updated_at too, which an update moves past created_at), and a list given uuids ignores every other
// filter, even one it would refuse on its own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, get } from './support.ts';

const uuidsOf = (b: { data: { uuid: string }[] }) => b.data.map((x) => x.uuid);

for (const dialect of testDialects()) {
  describe(`list properties and uuids [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    // Three associations made in this order; the first is then updated, so it is the oldest made and the newest
    // changed.
    const made: { uuid: string; created_at: string; updated_at: string }[] = [];
    let moved: { uuid: string; created_at: string; updated_at: string };
    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'] });
      alice = await t.createUser();
      const post = await createPost(t, alice, 'nothing to extract here');
      const tag = async (name: string) => {
        const res = await t.inject({
          method: 'POST',
          url: '/tags/create',
          token: alice.token,
          payload: { name, tag_type: 'hashtag' },
        });
        assert.equal(res.statusCode, 201, res.body);
        return body(res).data.uuid as string;
      };
      for (const name of ['first', 'second', 'third']) {
        const res = await t.inject({
          method: 'POST',
          url: '/tag-association',
          token: alice.token,
          payload: { tag_uuid: await tag(name), target_uuid: post, target_type: 'post' },
        });
        assert.equal(res.statusCode, 201, res.body);
        made.push(body(res).data);
        await sleep(5);
      }
      const res = await t.inject({
        method: 'PATCH',
        url: `/tag-associations/${made[0]?.uuid}`,
        token: alice.token,
        payload: { tag_uuid: await tag('fourth') },
      });
      assert.equal(res.statusCode, 200, res.body);
      moved = body(res).data;
    });
    after(async () => t?.close());

    it('sorts associations by updated_at, which an update moves', async () => {
      assert.ok(moved.updated_at > (made[2]?.updated_at ?? ''), 'the update is the latest change');
      assert.equal(moved.created_at, made[0]?.created_at, 'an update keeps created_at');
      const [a, b, c] = made.map((m) => m.uuid);
      const byUpdate = await get(t, '/tag-associations?sortby[updated_at]=desc');
      assert.deepEqual(uuidsOf(byUpdate), [a, c, b]);
      assert.equal(byUpdate.count.total, 3);
      assert.deepEqual(uuidsOf(await get(t, '/tag-associations?sortby[updated_at]=asc')), [b, c, a]);
      assert.deepEqual(uuidsOf(await get(t, '/tag-associations?sortby[created_at]=desc')), [c, b, a]);
      const page = await get(t, '/tag-associations?sortby[updated_at]=desc&limit=1&page=2');
      assert.deepEqual(uuidsOf(page), [c]);
      assert.deepEqual(page.count, { offset: 1, limit: 1, total: 3 });
    });

    it('filters associations by updated_at with every comparison', async () => {
      const [a, b, c] = made.map((m) => m.uuid);
      const since = made[2]?.updated_at;
      const list = async (filter: string) =>
        uuidsOf(await get(t, `/tag-associations?filterby[updated_at]${filter}&sortby[updated_at]=desc`));
      assert.deepEqual(await list(`[gt]=${since}`), [a]);
      assert.deepEqual(await list(`[ge]=${since}`), [a, c]);
      assert.deepEqual(await list(`[lt]=${since}`), [b]);
      assert.deepEqual(await list(`[le]=${since}`), [c, b]);
      assert.deepEqual(await list(`[eq]=${moved.updated_at}`), [a]);
      assert.deepEqual(await list(`[ne]=${moved.updated_at}`), [c, b]);
      const bad = await t.inject({
        method: 'GET',
        url: '/tag-associations?filterby[updated_at][gt]=yesterday',
        token: t.guest,
      });
      assert.equal(bad.statusCode, 400);
      assert.equal(body(bad).error.details[0].field, 'filterby[updated_at][gt]');
    });

    it('ignores every other filter when uuids is given, even one it would refuse alone', async () => {
      const [a, b] = made.map((m) => m.uuid);
      const refused = await t.inject({
        method: 'GET',
        url: '/tag-associations?filterby[colour]=red',
        token: t.guest,
      });
      assert.equal(refused.statusCode, 400);
      assert.match(body(refused).error.message, /filterby\[colour\]: unknown property/);
      const given = await get(
        t,
        `/tag-associations?uuids=${a},${b}&filterby[colour]=red&filterby[created_at][gt]=yesterday&filterby[uuid][regex]=x&sortby[updated_at]=asc`,
      );
      assert.deepEqual(uuidsOf(given), [b, a], 'sortby still applies');
      assert.equal(given.count.total, 2);
      const tag = made[1] as unknown as { tag_uuid: string };
      const tags = await get(
        t,
        `/tags?uuids=${tag.tag_uuid}&filterby[colour]=red&filterby[tag_type]=emotion`,
      );
      assert.deepEqual(uuidsOf(tags), [tag.tag_uuid]);
      const badUuid = await t.inject({
        method: 'GET',
        url: '/tags?uuids=not-a-uuid&filterby[colour]=red',
        token: t.guest,
      });
      assert.equal(badUuid.statusCode, 400, 'a malformed uuid is still refused');
    });
  });
}
