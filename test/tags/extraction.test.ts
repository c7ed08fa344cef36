import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { comparable } from '../security/world.ts';
import { associationsOf, createComment, createPost, findTag, get } from './support.ts';

for (const dialect of testDialects()) {
  describe(`tag extraction [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser('alice_x');
      bob = await t.createUser('Bob_Y');
    });
    after(async () => t?.close());
    const storedCount = async (key: string) =>
      (
        await t.ctx.db
          .selectFrom('tags')
          .select('associations_count')
          .where('tag_type', '=', 'hashtag')
          .where('name_key', '=', key)
          .executeTakeFirstOrThrow()
      ).associations_count;

    it('finds hashtags in several scripts and folds spellings into one tag', async () => {
      const post = await createPost(
        t,
        alice,
        'Hello #Café and #cafe, #CAFÉ! #日本語 #Москва #123 http://x.y/#frag www.z.org/#frag2 a#b (#snake_case)',
      );
      const cafe = await findTag(t, 'hashtag', 'CAFE');
      assert.equal(cafe.name, 'Café', 'the first spelling is kept');
      assert.equal(cafe.type, 'tag');
      assert.equal(cafe.associations_count, 1);
      for (const name of ['日本語', 'Москва', 'snake_case']) {
        const tag = await findTag(t, 'hashtag', name);
        assert.ok(tag, `#${name} is a hashtag`);
        assert.equal(tag.name, name);
      }
      for (const name of ['123', 'frag', 'frag2', 'b']) {
        assert.equal(await findTag(t, 'hashtag', name), undefined, `#${name} is not a hashtag`);
      }
      const assoc = await associationsOf(t, post);
      assert.equal(assoc.length, 4);
      for (const a of assoc) {
        assert.equal(a.user_uuid, alice.uuid);
        assert.equal(a.target_type, 'post');
      }
      assert.ok(cafe.associations.includes(assoc.find((a) => a.tag_uuid === cafe.uuid)?.uuid));

      // Another spelling in another post joins the same tag.
      await createPost(t, bob, 'me too #CAFE\u0301');
      const again = await findTag(t, 'hashtag', 'café');
      assert.equal(again.uuid, cafe.uuid);
      assert.equal(again.name, 'Café');
      assert.equal(again.associations_count, 2);
      assert.equal(again.associations.length, 2);
    });

    it('makes mention tags only for existing users, ignoring case', async () => {
      const post = await createPost(t, alice, 'hi @bob_y and @nobody_here, mail me at x@alice_x.example');
      const mention = await findTag(t, 'mention', 'bob_y');
      assert.equal(mention.name, 'Bob_Y', 'the mention carries the username');
      assert.equal(await findTag(t, 'mention', 'nobody_here'), undefined);
      assert.equal(await findTag(t, 'mention', 'alice_x'), undefined, 'an e-mail address is no mention');
      const assoc = await associationsOf(t, post);
      assert.deepEqual(
        assoc.map((a) => a.tag_uuid),
        [mention.uuid],
      );
    });

    it("a deleted user's mentions go with the account: whoever takes the name next inherits none", async () => {
      const carol = await t.createUser('Carol_Gone');
      const post = await createPost(t, alice, 'thanks @carol_gone for the help');
      const mention = await findTag(t, 'mention', 'carol_gone');
      assert.equal(mention.associations_count, 1);
      const del = await t.inject({ method: 'POST', url: `/users/${carol.uuid}/delete`, token: carol.token });
      assert.equal(del.statusCode, 200, del.body);
      assert.deepEqual(await associationsOf(t, post), [], "alice's post mentions nobody now");
      assert.equal(
        await findTag(t, 'mention', 'carol_gone'),
        undefined,
        'a mention tag with no use is not shown',
      );
      const read = await t.inject({ method: 'GET', url: `/tags/${mention.uuid}`, token: alice.token });
      assert.equal(read.statusCode, 404, read.body);
      // Someone else registers the name: the old post is not theirs to be mentioned in; a new mention is.
      await t.createUser('carol_gone');
      const fresh = await createPost(t, bob, 'hello @carol_gone');
      const again = await findTag(t, 'mention', 'carol_gone');
      assert.equal(again.associations_count, 1);
      assert.notEqual(again.uuid, mention.uuid, 'a new tag, not the one of the deleted user');
      assert.equal(again.name, 'carol_gone', "the new holder's spelling");
      assert.deepEqual(
        (await get(t, `/tag-associations?filterby[tag_uuid]=${again.uuid}`)).data.map(
          (a: { target_uuid: string }) => a.target_uuid,
        ),
        [fresh],
      );
    });

    it('re-syncs on edit and removes associations on delete (posts and comments)', async () => {
      const post = await createPost(t, alice, '#keep #drop @Bob_Y');
      const keep = await findTag(t, 'hashtag', 'keep');
      const drop = await findTag(t, 'hashtag', 'drop');
      assert.equal((await associationsOf(t, post)).length, 3);

      const upd = await t.inject({
        method: 'POST',
        url: `/posts/${post}/update`,
        token: alice.token,
        payload: { body: '#keep #added', language: 'de' },
      });
      assert.equal(upd.statusCode, 200, upd.body);
      const added = await findTag(t, 'hashtag', 'added');
      const after1 = await associationsOf(t, post);
      assert.deepEqual(new Set(after1.map((a) => a.tag_uuid)), new Set([keep.uuid, added.uuid]));
      // A tag extracted from content exists for others through its uses only: with none left it is visible to
      // nobody (docs/tags.md), though its row and count stay.
      assert.equal(await findTag(t, 'hashtag', 'drop'), undefined);
      const gone = await t.inject({ method: 'GET', url: `/tags/${drop.uuid}`, token: alice.token });
      assert.equal(gone.statusCode, 404, gone.body);
      assert.equal(await storedCount('drop'), 0);
      const de = await get(t, `/tag-associations?language=de&filterby[target_uuid]=${post}`);
      assert.equal(de.count.total, 2, 'the edit moved the associations to the new language');

      const comment = await createComment(t, bob, post, 'nice #keep #commentonly', { language: 'fr' });
      const commentAssoc = await associationsOf(t, comment);
      assert.equal(commentAssoc.length, 2);
      assert.ok(commentAssoc.every((a) => a.user_uuid === bob.uuid && a.target_type === 'comment'));
      assert.equal((await findTag(t, 'hashtag', 'keep')).associations_count, 2);
      const cupd = await t.inject({
        method: 'POST',
        url: `/comments/${comment}/update`,
        token: bob.token,
        payload: { body: 'nothing left' },
      });
      assert.equal(cupd.statusCode, 200, cupd.body);
      assert.equal((await associationsOf(t, comment)).length, 0);
      await createComment(t, bob, post, 'again #commentonly');

      const del = await t.inject({ method: 'POST', url: `/posts/${post}/delete`, token: alice.token });
      assert.equal(del.statusCode, 200, del.body);
      assert.equal((await associationsOf(t, post)).length, 0);
      for (const name of ['keep', 'commentonly', 'added']) {
        assert.equal(await storedCount(name), 0, name);
        assert.equal(await findTag(t, 'hashtag', name), undefined, name);
      }
    });

    it('creates a new hashtag once when many posts bring it at the same time', async () => {
      const users = await Promise.all([1, 2, 3, 4, 5, 6].map(() => t.createUser()));
      const results = await Promise.all(
        users.map((u, i) =>
          t.inject({
            method: 'POST',
            url: '/posts',
            token: u.token,
            payload: { body: `${i} #Race #RACE #rAce${i}` },
          }),
        ),
      );
      for (const r of results) assert.equal(r.statusCode, 201, r.body);
      const b = await get(t, '/tags?filterby[name][like]=race%25&filterby[tag_type]=hashtag&limit=100');
      assert.equal(b.count.total, 7);
      assert.equal((await findTag(t, 'hashtag', 'race')).associations_count, 6);
    });

    it('keeps the counts of shared tags exact when posts bring, drop and delete them at once', async () => {
      // PostgreSQL adds the counts at commit, one tag row at a time in uuid order (migrations 0016 and 0022): writers
      // naming the same tags in opposite orders must neither deadlock nor lose an increment.
      const users = await Promise.all([1, 2, 3, 4].map(() => t.createUser()));
      const orders = ['#Mesa #Butte #Arroyo', '#Arroyo #Butte #Mesa', '#Butte #Arroyo #Mesa'];
      const created = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          t.inject({
            method: 'POST',
            url: '/posts',
            token: (users[i % users.length] as TestUser).token,
            payload: { body: `trip ${i} ${orders[i % orders.length]}` },
          }),
        ),
      );
      for (const r of created) assert.equal(r.statusCode, 201, r.body);
      const posts = created.map((r, i) => ({
        uuid: body(r).data.uuid as string,
        user: users[i % users.length],
      }));
      const changes = await Promise.all(
        posts.map((p, i) =>
          i % 3 === 0
            ? t.inject({ method: 'POST', url: `/posts/${p.uuid}/delete`, token: (p.user as TestUser).token })
            : i % 3 === 1
              ? t.inject({
                  method: 'POST',
                  url: `/posts/${p.uuid}/update`,
                  token: (p.user as TestUser).token,
                  payload: { body: `trip ${i} #Mesa #Canyon` },
                })
              : Promise.resolve(undefined),
        ),
      );
      for (const r of changes) if (r) assert.ok(r.statusCode < 300, r.body);
      // 12 posts: 4 deleted, 4 now "#Mesa #Canyon", 4 unchanged.
      assert.equal((await findTag(t, 'hashtag', 'mesa')).associations_count, 8);
      assert.equal((await findTag(t, 'hashtag', 'canyon')).associations_count, 4);
      assert.equal((await findTag(t, 'hashtag', 'butte')).associations_count, 4);
      assert.equal((await findTag(t, 'hashtag', 'arroyo')).associations_count, 4);
    });

    it('keeps associations_count equal to the stored associations', async () => {
      const rows = await t.ctx.db.selectFrom('tags').select(['uuid', 'associations_count']).execute();
      for (const r of rows) {
        const n = await t.ctx.db
          .selectFrom('tag_associations')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('tag_uuid', '=', r.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(Number(r.associations_count), Number(n.n));
      }
    });

    it('hides the associations of a private post from others', async () => {
      const post = await createPost(t, alice, 'secret #hidden', { visibility: 'private' });
      assert.equal((await associationsOf(t, post, alice.token)).length, 1);
      assert.equal((await associationsOf(t, post, bob.token)).length, 0);
      assert.equal((await associationsOf(t, post)).length, 0);
      const [a] = await associationsOf(t, post, alice.token);
      const res = await t.inject({ method: 'GET', url: `/tag-associations/${a?.uuid}`, token: bob.token });
      assert.equal(res.statusCode, 404);
      assert.equal(body(res).error.code, 'object_not_found');
    });

    it("a tag's associations list only those whose target the caller may see", async () => {
      const open = await createPost(t, alice, 'open #mixedvis');
      const closed = await createPost(t, alice, 'closed #mixedvis', { visibility: 'private' });
      const [openA] = await associationsOf(t, open, alice.token);
      const [closedA] = await associationsOf(t, closed, alice.token);
      const tag = await findTag(t, 'hashtag', 'mixedvis');
      for (const [who, token] of [
        ['guest', undefined],
        ['stranger', bob.token],
      ] as const) {
        const one = await get(t, `/tags/${tag.uuid}`, token);
        assert.deepEqual(one.data.associations, [openA?.uuid], `${who}: GET /tags/{uuid}`);
        const list = await get(t, `/tags?uuids=${tag.uuid}`, token);
        assert.deepEqual(list.data[0].associations, [openA?.uuid], `${who}: GET /tags`);
      }
      const own = await get(t, `/tags/${tag.uuid}`, alice.token);
      assert.deepEqual(
        own.data.associations,
        [closedA?.uuid, openA?.uuid],
        'the author sees both, newest first',
      );
    });
  });

  describe(`emotions [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    let fan: TestUser;
    let stranger: TestUser;
    let post: string;
    let comment: string;
    before(async () => {
      t = await startTestApp(dialect);
      author = await t.createUser();
      fan = await t.createUser();
      stranger = await t.createUser();
      post = await createPost(t, author, 'react to me');
      comment = await createComment(t, author, post, 'and to me');
    });
    after(async () => t?.close());

    it('lists the configured emotions as tags', async () => {
      const b = await get(t, '/tags?filterby[tag_type]=emotion&sortby[name]=asc');
      assert.deepEqual(
        b.data.map((x: { name: string }) => x.name),
        ['angry', 'haha', 'like', 'love', 'sad', 'wow'],
      );
    });

    it('reacts once per user, emotion and target; again answers 200 with the same association', async () => {
      const first = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions`,
        token: fan.token,
        payload: { name: 'love' },
      });
      assert.equal(first.statusCode, 201, first.body);
      const a = body(first).data;
      assert.equal(a.type, 'tag_association');
      assert.equal(a.user_uuid, fan.uuid);
      assert.equal(a.target_uuid, post);
      assert.equal(a.target_type, 'post');
      const second = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions`,
        token: fan.token,
        payload: { name: 'love' },
      });
      assert.equal(second.statusCode, 200);
      assert.equal(body(second).data.uuid, a.uuid);
      const love = await findTag(t, 'emotion', 'love');
      assert.equal(love.associations_count, 1);
      assert.deepEqual(love.associations, [a.uuid]);

      const onComment = await t.inject({
        method: 'POST',
        url: `/comments/${comment}/emotions`,
        token: fan.token,
        payload: { name: 'haha' },
      });
      assert.equal(onComment.statusCode, 201);
      assert.equal(body(onComment).data.target_type, 'comment');
    });

    it('gives the author karma through emotionCreated and takes it back on unreact', async () => {
      const before = (await get(t, `/users/${author.uuid}`)).data.karma;
      const r = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions`,
        token: stranger.token,
        payload: { name: 'wow' },
      });
      assert.equal(r.statusCode, 201);
      const mid = (await get(t, `/users/${author.uuid}`)).data.karma;
      assert.ok(mid > before, 'the author received karma');
      const d = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions/wow/delete`,
        token: stranger.token,
      });
      assert.equal(d.statusCode, 200, d.body);
      assert.deepEqual(Object.keys(body(d)).sort(), ['status', 'timestamp']);
      assert.equal((await get(t, `/users/${author.uuid}`)).data.karma, before);
    });

    it('answers taking back a reaction on a post its user may no longer see as on a missing post', async () => {
      // Before, the reaction still stored there answered 200, telling the user the hidden post exists.
      const hidden = await createPost(t, author, 'soon private');
      const unreact = (target: string) =>
        t.inject({ method: 'POST', url: `/posts/${target}/emotions/sad/delete`, token: fan.token });
      const reacted = await t.inject({
        method: 'POST',
        url: `/posts/${hidden}/emotions`,
        token: fan.token,
        payload: { name: 'sad' },
      });
      assert.equal(reacted.statusCode, 201);
      const visibility = (value: string) =>
        t.inject({
          method: 'POST',
          url: `/posts/${hidden}/update`,
          token: author.token,
          payload: { visibility: value },
        });
      assert.equal((await visibility('private')).statusCode, 200);
      const refused = await unreact(hidden);
      assert.equal(refused.statusCode, 404);
      assert.equal(comparable(refused), comparable(await unreact('0190a000-0000-7000-8000-00000000d00d')));
      const stored = await t.ctx.db
        .selectFrom('tag_associations')
        .select('uuid')
        .where('target_uuid', '=', hidden)
        .where('user_uuid', '=', fan.uuid)
        .execute();
      assert.equal(stored.length, 1, 'the reaction is kept');
      assert.equal((await visibility('public')).statusCode, 200);
      assert.equal((await unreact(hidden)).statusCode, 200);
    });

    it('lets only the reacting user take a reaction back', async () => {
      const byStranger = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions/love/delete`,
        token: stranger.token,
      });
      assert.equal(byStranger.statusCode, 404);
      assert.equal(body(byStranger).error.code, 'object_not_found');
      const byGuest = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions/love/delete`,
        token: t.guest,
      });
      assert.equal(byGuest.statusCode, 403);
      assert.equal(body(byGuest).error.code, 'login_required');
      const wrongKind = await t.inject({
        method: 'POST',
        url: `/comments/${post}/emotions/love/delete`,
        token: fan.token,
      });
      assert.equal(wrongKind.statusCode, 404);
      const byFan = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions/love/delete`,
        token: fan.token,
      });
      assert.equal(byFan.statusCode, 200);
      assert.equal((await findTag(t, 'emotion', 'love')).associations_count, 0);
      const twice = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions/love/delete`,
        token: fan.token,
      });
      assert.equal(twice.statusCode, 404);
    });

    it('refuses guests, unknown emotions, invisible and missing targets', async () => {
      const guest = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions`,
        token: t.guest,
        payload: { name: 'like' },
      });
      assert.equal(guest.statusCode, 403);
      const unknown = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions`,
        token: fan.token,
        payload: { name: 'meh' },
      });
      assert.equal(unknown.statusCode, 400);
      assert.equal(body(unknown).error.code, 'invalid_request');
      const hidden = await createPost(t, author, 'only me', { visibility: 'private' });
      const invisible = await t.inject({
        method: 'POST',
        url: `/posts/${hidden}/emotions`,
        token: fan.token,
        payload: { name: 'like' },
      });
      assert.equal(invisible.statusCode, 404);
      assert.equal(body(invisible).error.code, 'object_not_found');
      const own = await t.inject({
        method: 'POST',
        url: `/posts/${hidden}/emotions`,
        token: author.token,
        payload: { name: 'like' },
      });
      assert.equal(own.statusCode, 201);
      const missing = await t.inject({
        method: 'POST',
        url: '/posts/0190a1b2-0000-7000-8000-000000000001/emotions',
        token: fan.token,
        payload: { name: 'like' },
      });
      assert.equal(missing.statusCode, 404);
      const bad = await t.inject({
        method: 'POST',
        url: '/posts/not-a-uuid/emotions',
        token: fan.token,
        payload: { name: 'like' },
      });
      assert.equal(bad.statusCode, 400);
    });
  });
}
