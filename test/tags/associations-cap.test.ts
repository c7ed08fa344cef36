// DESIGN: a tag's `associations` holds the uuids of its most recent associations, at most 100, and
// `associations_count` the total. A tag with 101 uses shows the newest 100, newest first, on every read of it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';
import { createPost, findTag, get } from './support.ts';

const USES = 101;

for (const dialect of testDialects()) {
  describe(`tags: associations capped at the newest 100 [${dialect.name}]`, () => {
    let t: TestApp;
    let tagUuid: string;
    /** Every association of the tag, newest first, from the association list. */
    let newestFirst: string[];

    before(async () => {
      t = await startTestApp(dialect);
      const user = await t.createUser();
      for (let i = 0; i < USES; i++) await createPost(t, user, `use ${i} of #capme`);
      tagUuid = (await findTag(t, 'hashtag', 'capme')).uuid;
      const list = `/tag-associations?filterby[tag_uuid]=${tagUuid}&sortby[created_at]=desc&sortby[uuid]=desc&limit=100`;
      const first = await get(t, list);
      const second = await get(t, `${list}&offset=100`);
      assert.equal(first.count.total, USES);
      newestFirst = [...first.data, ...second.data].map((a: { uuid: string }) => a.uuid);
      assert.equal(new Set(newestFirst).size, USES);
    });
    after(async () => t?.close());

    it('GET /tags/{uuid} lists the newest 100 of 101, newest first, and counts all 101', async () => {
      const tag = (await get(t, `/tags/${tagUuid}`)).data;
      assert.equal(tag.associations_count, USES);
      assert.deepEqual(tag.associations, newestFirst.slice(0, 100));
      assert.ok(!tag.associations.includes(newestFirst[USES - 1]), 'the oldest is left out');
    });

    it('GET /tags?uuids= and a # search show the same 100', async () => {
      const listed = (await get(t, `/tags?uuids=${tagUuid}`)).data[0];
      assert.equal(listed.associations_count, USES);
      assert.deepEqual(listed.associations, newestFirst.slice(0, 100));
      const found = (await get(t, '/search?query=%23capme')).data[0];
      assert.equal(found.uuid, tagUuid);
      assert.equal(found.associations_count, USES);
      assert.deepEqual(found.associations, newestFirst.slice(0, 100));
    });
  });
}
