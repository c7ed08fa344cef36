import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { ledger, ledgerSum, storedKarma } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'karma-compensation-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const CAP = 3;

for (const dialect of testDialects()) {
  describe(`karma compensation records and the daily cap [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    let fan: TestUser;

    before(async () => {
      const path = join(dir, `rules-${dialect.name}.json`);
      writeFileSync(path, JSON.stringify({ rules: { emotionReceived: { points: 1, daily_cap: CAP } } }));
      t = await startTestApp(dialect, { KARMA_RULES: path });
      author = await t.createUser();
      fan = await t.createUser();
    });
    after(async () => t?.close());

    async function createPost(user: TestUser, text: string): Promise<string> {
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: text },
      });
      assert.equal(res.statusCode, 201, res.body);
      return body(res).data.uuid;
    }

    it('a subtract record cannot be deleted: 400 invalid_request saying why, and the total stays', async () => {
      const u = await t.createUser();
      const post = await createPost(u, 'soon gone');
      const del = await t.inject({ method: 'POST', url: `/posts/${post}/delete`, token: u.token });
      assert.equal(del.statusCode, 200, del.body);
      const sub = (await ledger(t, u.uuid)).find((r) => r.karma_type === 'subtract');
      assert.equal(sub?.event, 'postDeleted');
      assert.equal(await storedKarma(t, u.uuid), 0);

      const res = await t.inject({ method: 'POST', url: `/karma/${sub?.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(body(res).error.code, 'invalid_request');
      assert.match(body(res).error.message, /subtract/);
      assert.match(body(res).error.message, /audit trail/);
      // Nothing changed: the record is still there, no points came back for the deleted post.
      assert.equal(await storedKarma(t, u.uuid), 0);
      assert.equal(await ledgerSum(t, u.uuid), 0);
      const get = await t.inject({ method: 'GET', url: `/karma/${sub?.uuid}`, token: u.token });
      assert.equal(get.statusCode, 200);

      // A stranger and a guest still get 404 / 401 (not the 400), as for any foreign record.
      const stranger = await t.inject({
        method: 'POST',
        url: `/karma/${sub?.uuid}/delete`,
        token: fan.token,
      });
      assert.equal(stranger.statusCode, 404);
      const guest = await t.inject({ method: 'POST', url: `/karma/${sub?.uuid}/delete`, token: t.guest });
      assert.equal(guest.statusCode, 403);

      // An add record can still be deleted by its owner.
      const add = (await ledger(t, u.uuid)).find((r) => r.karma_type === 'add');
      const ok = await t.inject({ method: 'POST', url: `/karma/${add?.uuid}/delete`, token: u.token });
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(await storedKarma(t, u.uuid), -2);
      assert.equal(await ledgerSum(t, u.uuid), -2);
    });

    it('liking and unliking one post many times does not use up the daily cap of its author', async () => {
      const post = await createPost(author, 'like me');
      for (let i = 0; i < CAP * 3; i++) {
        const like = await t.inject({
          method: 'POST',
          url: `/posts/${post}/emotions`,
          token: fan.token,
          payload: { name: 'like' },
        });
        assert.equal(like.statusCode, 201, like.body);
        const unlike = await t.inject({
          method: 'POST',
          url: `/posts/${post}/emotions/like/delete`,
          token: fan.token,
        });
        assert.equal(unlike.statusCode, 200, unlike.body);
      }
      const base = await storedKarma(t, author.uuid);
      // Other users' reactions today still pay, up to the cap.
      const paid: number[] = [];
      for (let i = 0; i < CAP + 1; i++) {
        const other = await t.createUser();
        const res = await t.inject({
          method: 'POST',
          url: `/posts/${post}/emotions`,
          token: other.token,
          payload: { name: 'love' },
        });
        assert.equal(res.statusCode, 201, res.body);
        paid.push((await storedKarma(t, author.uuid)) - base);
      }
      assert.deepEqual(paid, [1, 2, 3, 3]);
      assert.equal(await storedKarma(t, author.uuid), await ledgerSum(t, author.uuid));
    });
  });
}
