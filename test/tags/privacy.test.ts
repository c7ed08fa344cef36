import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createComment, createPost, get } from './support.ts';

const MISSING = '0190a1b2-3c4d-7e5f-8a6b-7c8d9e0f1a2b';
const names = (b: { data: { name: string }[] }) => b.data.map((x) => x.name).sort();

for (const dialect of testDialects()) {
  describe(`tag visibility follows the visibility of what the tag is used on [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    let carol: TestUser;
    let secret: string;

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'] });
      alice = await t.createUser();
      bob = await t.createUser();
      carol = await t.createUser();
      // bob is alice's confirmed friend; carol is a stranger.
      const req = await t.inject({
        method: 'POST',
        url: '/connections',
        token: alice.token,
        payload: { user_uuid: bob.uuid },
      });
      assert.equal(req.statusCode, 201, req.body);
      const conf = await t.inject({
        method: 'POST',
        url: `/connections/${body(req).data.uuid}/confirm`,
        token: bob.token,
      });
      assert.equal(conf.statusCode, 200, conf.body);
      await createPost(t, alice, 'plans #secretplan', { visibility: 'private' });
      const friendsPost = await createPost(t, alice, 'for friends #friendsonly', { visibility: 'friends' });
      await createComment(t, alice, friendsPost, 'a comment #commentsecret');
      await createPost(t, alice, 'come along #openday');
      const own = await get(t, '/tags?filterby[name]=secretplan', alice.token);
      assert.equal(own.data.length, 1, 'the author sees the tag of their private post');
      secret = own.data[0].uuid;
    });
    after(async () => t?.close());

    const hashtags = '/tags?filterby[tag_type]=hashtag&limit=100';

    it('GET /tags lists, counts and filters only the tags a caller may see', async () => {
      for (const token of [t.guest, carol.token]) {
        const b = await get(t, hashtags, token);
        assert.deepEqual(names(b), ['openday']);
        assert.equal(b.count.total, 1);
        const byName = await get(t, '/tags?filterby[name]=secretplan', token);
        assert.deepEqual(byName.data, []);
        assert.equal(byName.count.total, 0);
        const like = await get(t, '/tags?filterby[name][like]=%25secret%25', token);
        assert.equal(like.count.total, 0);
        const byUuids = await get(t, `/tags?uuids=${secret}`, token);
        assert.equal(byUuids.count.total, 0);
      }
      const friend = await get(t, hashtags, bob.token);
      assert.deepEqual(names(friend), ['commentsecret', 'friendsonly', 'openday']);
      assert.equal(friend.count.total, 3);
      const owner = await get(t, hashtags, alice.token);
      assert.deepEqual(names(owner), ['commentsecret', 'friendsonly', 'openday', 'secretplan']);
      assert.equal(owner.count.total, 4);
    });

    it('GET /tags/{uuid} answers 404 for a hidden tag, exactly as for a missing one', async () => {
      const missing = await t.inject({ method: 'GET', url: `/tags/${MISSING}`, token: carol.token });
      for (const token of [t.guest, carol.token, bob.token]) {
        const res = await t.inject({ method: 'GET', url: `/tags/${secret}`, token });
        assert.equal(res.statusCode, 404);
        assert.equal(body(res).error.code, 'object_not_found');
        assert.equal(body(res).error.message, body(missing).error.message);
      }
      const own = await t.inject({ method: 'GET', url: `/tags/${secret}`, token: alice.token });
      assert.equal(own.statusCode, 200);
      assert.equal(body(own).data.name, 'secretplan');
    });

    it('emotion tags and tags without associations stay visible to everyone', async () => {
      const emotions = await get(t, '/tags?filterby[tag_type]=emotion');
      assert.equal(emotions.count.total, 6);
      const created = await t.inject({
        method: 'POST',
        url: '/tags/create',
        token: carol.token,
        payload: { name: 'unusedtag', tag_type: 'hashtag' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const uuid = body(created).data.uuid;
      const res = await t.inject({ method: 'GET', url: `/tags/${uuid}`, token: t.guest });
      assert.equal(res.statusCode, 200);
      assert.equal((await get(t, '/tags?filterby[name]=unusedtag')).count.total, 1);
    });

    it('a tag whose last use is deleted or edited away stays hidden (only a created tag is visible unused)', async () => {
      const tagOf = async (name: string) =>
        (await get(t, `/tags?filterby[name]=${name}`, alice.token)).data[0].uuid;
      const hiddenFromOthers = async (uuid: string, name: string) => {
        for (const token of [t.guest, carol.token]) {
          const res = await t.inject({ method: 'GET', url: `/tags/${uuid}`, token });
          assert.equal(res.statusCode, 404, `${name}: ${res.body}`);
          assert.equal((await get(t, `/tags?filterby[name]=${name}`, token)).count.total, 0);
          const found = await get(t, `/search/hashtags?query=${name.slice(0, 6)}`, token);
          assert.deepEqual(found.data, [], name);
        }
      };
      const deleted = await createPost(t, alice, 'layoffs planned #layoffsmarch', { visibility: 'private' });
      const layoffs = await tagOf('layoffsmarch');
      await hiddenFromOthers(layoffs, 'layoffsmarch');
      const del = await t.inject({ method: 'POST', url: `/posts/${deleted}/delete`, token: alice.token });
      assert.equal(del.statusCode, 200, del.body);
      await hiddenFromOthers(layoffs, 'layoffsmarch');
      const edited = await createPost(t, alice, 'merger talk #acmesecret', { visibility: 'friends' });
      const acme = await tagOf('acmesecret');
      const upd = await t.inject({
        method: 'POST',
        url: `/posts/${edited}/update`,
        token: alice.token,
        payload: { body: 'merger talk, nothing to see' },
      });
      assert.equal(upd.statusCode, 200, upd.body);
      await hiddenFromOthers(acme, 'acmesecret');
      // A tag made through /tags/create is public from the start, stays visible while its only use is hidden (hiding
      // it would tell a watcher that someone used the word, and let anyone hide it) and when its uses go.
      const created = await t.inject({
        method: 'POST',
        url: '/tags/create',
        token: alice.token,
        payload: { name: 'madeopenly', tag_type: 'hashtag' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const used = await createPost(t, alice, 'private use #madeopenly', { visibility: 'private' });
      for (const token of [t.guest, carol.token]) {
        const seen = await t.inject({ method: 'GET', url: `/tags/${body(created).data.uuid}`, token });
        assert.equal(seen.statusCode, 200, seen.body);
        assert.deepEqual(body(seen).data.associations, [], 'without the hidden use');
        assert.equal((await get(t, '/tags?filterby[name]=madeopenly', token)).count.total, 1);
      }
      const gone = await t.inject({ method: 'POST', url: `/posts/${used}/delete`, token: alice.token });
      assert.equal(gone.statusCode, 200, gone.body);
      const open = await t.inject({ method: 'GET', url: `/tags/${body(created).data.uuid}`, token: t.guest });
      assert.equal(open.statusCode, 200, open.body);
      assert.equal(body(open).data.associations_count, 0, 'its only use went with the post');
      assert.deepEqual(body(open).data.associations, []);
    });

    it('a hidden tag used once in public becomes visible; associations_count stays the total', async () => {
      const post = await createPost(t, carol, 'now public #secretplan');
      const res = await t.inject({ method: 'GET', url: `/tags/${secret}`, token: t.guest });
      assert.equal(res.statusCode, 200);
      const tag = body(res).data;
      assert.equal(tag.associations_count, 2, 'the total over every association');
      assert.equal(tag.associations.length, 1, 'only the visible association is listed');
      const del = await t.inject({ method: 'POST', url: `/posts/${post}/delete`, token: carol.token });
      assert.equal(del.statusCode, 200);
      const again = await t.inject({ method: 'GET', url: `/tags/${secret}`, token: t.guest });
      assert.equal(again.statusCode, 404);
    });

    it('trending counts only public uses', async () => {
      for (const token of [t.guest, alice.token]) {
        const b = await get(t, '/tags/trending?window=2&limit=50', token);
        const trending = (b.data as { name: string }[]).map((x) => x.name);
        assert.ok(trending.includes('openday'));
        for (const hidden of ['secretplan', 'friendsonly', 'commentsecret'])
          assert.ok(!trending.includes(hidden));
      }
    });

    it('deleting a message removes its tag associations (messageDeleted)', async () => {
      const sent = await t.inject({
        method: 'POST',
        url: '/messages',
        token: alice.token,
        payload: { recipient_uuid: bob.uuid, body: 'hello' },
      });
      assert.equal(sent.statusCode, 201, sent.body);
      const message = body(sent).data.uuid;
      const tag = await t.inject({
        method: 'POST',
        url: '/tags/create',
        token: alice.token,
        payload: { name: 'inbox', tag_type: 'hashtag' },
      });
      const tagUuid = body(tag).data.uuid;
      const assoc = await t.inject({
        method: 'POST',
        url: '/tag-association',
        token: alice.token,
        payload: { tag_uuid: tagUuid, target_uuid: message, target_type: 'messages' },
      });
      assert.equal(assoc.statusCode, 201, assoc.body);
      const assocUuid = body(assoc).data.uuid;
      assert.equal(
        body(await t.inject({ method: 'GET', url: `/tags/${tagUuid}`, token: alice.token })).data
          .associations_count,
        1,
      );
      // The recipient cannot delete it; the sender can.
      const foreign = await t.inject({
        method: 'POST',
        url: `/messages/${message}/delete`,
        token: bob.token,
      });
      assert.equal(foreign.statusCode, 404);
      const del = await t.inject({ method: 'POST', url: `/messages/${message}/delete`, token: alice.token });
      assert.equal(del.statusCode, 200, del.body);
      const gone = await t.inject({
        method: 'GET',
        url: `/tag-associations/${assocUuid}`,
        token: alice.token,
      });
      assert.equal(gone.statusCode, 404);
      const rows = await t.ctx.db
        .selectFrom('tag_associations')
        .select('uuid')
        .where('target_uuid', '=', message)
        .execute();
      assert.deepEqual(rows, []);
      const after = await t.inject({ method: 'GET', url: `/tags/${tagUuid}`, token: alice.token });
      assert.equal(after.statusCode, 200);
      assert.equal(body(after).data.associations_count, 0);
    });
  });
}
