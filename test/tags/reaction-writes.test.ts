import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, findTag, get } from './support.ts';

const MISSING = '0190a1b2-3c4d-7e5f-8a6b-7c8d9e0f1a2b';

/** An error answer without what differs per request. */
function stable(raw: string): unknown {
  const { timestamp: _ts, ...rest } = JSON.parse(raw);
  const { request_id: _id, ...error } = rest.error ?? {};
  return { ...rest, error };
}

// With the association writes switched on, a reaction written or removed through them moves karma exactly as the
// emotion routes do, and a tag hidden from the caller can be neither used nor named (docs/tag-associations.md).
for (const dialect of testDialects()) {
  describe(`reactions and hidden tags through the association writes [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    let fan: TestUser;
    let stranger: TestUser;
    let post: string;
    const karmaOf = async (user: TestUser) => (await get(t, `/users/${user.uuid}`)).data.karma as number;
    const send = (method: 'POST' | 'DELETE' | 'PATCH', url: string, token: string, payload?: object) =>
      t.inject({ method, url, token, ...(payload ? { payload } : {}) });

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'] });
      author = await t.createUser();
      fan = await t.createUser();
      stranger = await t.createUser();
      post = await createPost(t, author, 'a post to react to');
    });
    after(async () => t?.close());

    it('deleting a reaction through /tag-associations takes its karma back, so reacting again mints nothing', async () => {
      const start = await karmaOf(author);
      for (let i = 0; i < 3; i++) {
        const r = await send('POST', `/posts/${post}/emotions`, fan.token, { name: 'wow' });
        assert.equal(r.statusCode, 201, r.body);
        assert.equal(await karmaOf(author), start + 1, 'the reaction grants its point');
        const d = await send('DELETE', `/tag-associations/${body(r).data.uuid}`, fan.token);
        assert.equal(d.statusCode, 200, d.body);
        assert.equal(await karmaOf(author), start, 'and its removal takes it back');
      }
    });

    it('an emotion associated through /tag-association is a reaction: it grants karma and gives it back', async () => {
      const start = await karmaOf(author);
      const love = await findTag(t, 'emotion', 'love');
      const c = await send('POST', '/tag-association', fan.token, {
        tag_uuid: love.uuid,
        target_uuid: post,
        target_type: 'post',
      });
      assert.equal(c.statusCode, 201, c.body);
      assert.equal(await karmaOf(author), start + 1);
      const again = await send('POST', `/posts/${post}/emotions`, fan.token, { name: 'love' });
      assert.equal(again.statusCode, 200, 'the same reaction, not a second one');
      assert.equal(await karmaOf(author), start + 1);
      const d = await send('DELETE', `/tag-associations/${body(c).data.uuid}`, fan.token);
      assert.equal(d.statusCode, 200, d.body);
      assert.equal(await karmaOf(author), start);
    });

    it('a reaction cannot be moved to another tag or target: 400, nothing changes', async () => {
      const r = await send('POST', `/posts/${post}/emotions`, fan.token, { name: 'haha' });
      assert.equal(r.statusCode, 201, r.body);
      const reaction = body(r).data;
      const start = await karmaOf(author);
      const other = await createPost(t, stranger, 'another post #movedhere');
      const hashtag = await findTag(t, 'hashtag', 'movedhere');
      for (const patch of [{ tag_uuid: hashtag.uuid }, { target_uuid: other, target_type: 'post' }]) {
        const u = await send('PATCH', `/tag-associations/${reaction.uuid}`, fan.token, patch);
        assert.equal(u.statusCode, 400, u.body);
        assert.equal(body(u).error.code, 'invalid_request');
      }
      const sad = await findTag(t, 'emotion', 'sad');
      const plain = await send('POST', '/tag-association', fan.token, {
        tag_uuid: hashtag.uuid,
        target_uuid: post,
        target_type: 'post',
      });
      assert.equal(plain.statusCode, 201, plain.body);
      const toEmotion = await send('PATCH', `/tag-associations/${body(plain).data.uuid}`, fan.token, {
        tag_uuid: sad.uuid,
      });
      assert.equal(toEmotion.statusCode, 400, 'an association does not become a reaction either');
      const stored = (await get(t, `/tag-associations?uuids=${reaction.uuid}`, fan.token)).data[0];
      assert.equal(stored.tag_uuid, reaction.tag_uuid);
      assert.equal(stored.target_uuid, post);
      assert.equal(await karmaOf(author), start);
    });

    it('a tag hidden from the caller is 404 to associate, exactly as a missing one, and never named', async () => {
      await createPost(t, author, 'just for me #hiddenname', { visibility: 'private' });
      const hidden = (await get(t, '/tags?filterby[name]=hiddenname', author.token)).data[0];
      const own = await createPost(t, stranger, 'my public post');
      const attempt = (tag: string) =>
        send('POST', '/tag-association', stranger.token, {
          tag_uuid: tag,
          target_uuid: own,
          target_type: 'post',
        });
      const refused = await attempt(hidden.uuid);
      const missing = await attempt(MISSING);
      assert.equal(refused.statusCode, 404, refused.body);
      assert.deepEqual(stable(refused.body), stable(missing.body));
      const created = await send('POST', '/tags/create', stranger.token, {
        name: 'HiddenName',
        tag_type: 'hashtag',
      });
      assert.equal(created.statusCode, 409, created.body);
      assert.ok(!created.body.includes(hidden.uuid), 'the conflict does not give the hidden tag away');
      assert.ok(!created.body.toLowerCase().includes('hiddenname'), created.body);
      const res = await t.inject({ method: 'GET', url: `/tags/${hidden.uuid}`, token: t.guest });
      assert.equal(res.statusCode, 404, 'and the tag stays hidden');
      // A tag the caller may see is named, to be used instead.
      await createPost(t, author, 'for all #shownname');
      const shown = await findTag(t, 'hashtag', 'shownname');
      const taken = await send('POST', '/tags/create', stranger.token, {
        name: 'ShownName',
        tag_type: 'hashtag',
      });
      assert.equal(taken.statusCode, 409);
      assert.ok(taken.body.includes(shown.uuid), taken.body);
    });
  });
}
