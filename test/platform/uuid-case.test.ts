import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// Uuids are case-insensitive on every route (src/http/uuid-case.ts): an upper-case spelling finds the same thing.
for (const dialect of testDialects()) {
  describe(`uuids in any case [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    let post: string;
    const upper = (uuid: string) => uuid.toUpperCase();

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      bob = await t.createUser();
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: alice.token,
        payload: { body: 'a post #casetest', visibility: 'public' },
      });
      assert.equal(res.statusCode, 201, res.body);
      post = body(res).data.uuid;
    });
    after(async () => t?.close());

    it('path parameters: the same item, answered in lower case', async () => {
      for (const url of [`/posts/${upper(post)}`, `/users/${upper(alice.uuid)}`]) {
        const res = await t.inject({ method: 'GET', url, token: t.guest });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        assert.equal(body(res).data.uuid, url.includes('/posts/') ? post : alice.uuid);
      }
    });

    it('body fields and query lists: the same references', async () => {
      const conn = await t.inject({
        method: 'POST',
        url: '/connections',
        token: alice.token,
        payload: { user_uuid: upper(bob.uuid) },
      });
      assert.equal(conn.statusCode, 201, conn.body);
      assert.ok(JSON.stringify(body(conn).data).includes(bob.uuid));
      const assoc = await t.inject({
        method: 'GET',
        url: `/tag-associations?filterby[target_uuid]=${upper(post)}`,
        token: t.guest,
      });
      assert.equal(assoc.statusCode, 200, assoc.body);
      assert.equal(body(assoc).count.total, 1);
      const listed = await t.inject({
        method: 'GET',
        url: `/tag-associations?uuids=${upper(body(assoc).data[0].uuid)}`,
        token: t.guest,
      });
      assert.equal(body(listed).count.total, 1);
    });

    it('text that merely looks like a uuid is stored as written', async () => {
      const text = upper(post);
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: bob.token,
        payload: { body: text },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(body(res).data.body, text);
    });
  });
}
