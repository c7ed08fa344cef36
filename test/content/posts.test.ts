import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { body, countRows, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

/** The error of a response without the parts that differ per request. */
function errorShape(res: LightMyRequestResponse) {
  const b = body(res);
  return {
    status: res.statusCode,
    code: b.error?.code,
    message: b.error?.message,
    keys: Object.keys(b).sort(),
  };
}

for (const dialect of testDialects()) {
  describe(`posts and comments [${dialect.name}]`, () => {
    let t: TestApp;
    let owner: TestUser;
    let friend: TestUser;
    let stranger: TestUser;
    const posts: Record<string, string> = {};
    let failPostCreated = false;

    before(async () => {
      t = await startTestApp(dialect);
      owner = await t.createUser();
      friend = await t.createUser();
      stranger = await t.createUser();
      t.ctx.bus.on(['postCreated'], async () => {
        if (failPostCreated) throw new Error('subscriber forced to fail');
      });
      // owner and friend become friends: request by owner, confirmation by friend.
      const req = await t.inject({
        method: 'POST',
        url: '/connections',
        token: owner.token,
        payload: { user_uuid: friend.uuid },
      });
      assert.equal(req.statusCode, 201);
      const confirm = await t.inject({
        method: 'POST',
        url: `/connections/${body(req).data.uuid}/confirm`,
        token: friend.token,
      });
      assert.equal(confirm.statusCode, 200);
    });
    after(async () => t?.close());

    it('creates a post with each visibility (201, default public, author language)', async () => {
      for (const visibility of ['public', 'friends', 'private'] as const) {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: owner.token,
          payload: { body: `a ${visibility} post`, visibility },
        });
        assert.equal(res.statusCode, 201, res.body);
        const p = body(res).data;
        assert.equal(p.type, 'post');
        assert.equal(p.visibility, visibility);
        assert.equal(p.user_uuid, owner.uuid);
        assert.equal(p.language, 'en');
        assert.equal(p.network_uuid, null);
        posts[visibility] = p.uuid;
      }
      const dflt = await t.inject({
        method: 'POST',
        url: '/posts',
        token: owner.token,
        payload: { body: 'Hallo Welt', language: 'de' },
      });
      assert.equal(dflt.statusCode, 201);
      assert.equal(body(dflt).data.visibility, 'public');
      assert.equal(body(dflt).data.language, 'de');
    });

    it("gives a post without a language its author's language, as stored", async () => {
      const author = await t.createUser();
      const set = await t.inject({
        method: 'POST',
        url: `/users/${author.uuid}/update`,
        token: author.token,
        payload: { language: 'fr' },
      });
      assert.equal(set.statusCode, 200, set.body);
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: author.token,
        payload: { body: 'bonjour' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const uuid = body(res).data.uuid;
      assert.equal(body(res).data.language, 'fr');
      assert.equal(body(await t.inject({ url: `/posts/${uuid}`, token: author.token })).data.language, 'fr');
      const stored = await t.ctx.db
        .selectFrom('posts')
        .select('language')
        .where('uuid', '=', uuid)
        .executeTakeFirst();
      assert.equal(stored?.language, 'fr');
    });

    it('shows each post only to those allowed; not visible answers exactly like missing', async () => {
      const readers = { guest: t.guest, stranger: stranger.token, friend: friend.token, owner: owner.token };
      const expected: Record<string, string[]> = {
        guest: ['public'],
        stranger: ['public'],
        friend: ['public', 'friends'],
        owner: ['public', 'friends', 'private'],
      };
      const missing = await t.inject({
        method: 'GET',
        url: '/posts/0190a000-0000-7000-8000-000000000000',
        token: stranger.token,
      });
      assert.equal(missing.statusCode, 404);
      assert.equal(body(missing).error.code, 'object_not_found');
      // The posts come from the first test; without all three this one would check nothing.
      assert.deepEqual(Object.keys(posts).sort(), ['friends', 'private', 'public']);
      for (const [who, token] of Object.entries(readers)) {
        for (const [visibility, uuid] of Object.entries(posts)) {
          const res = await t.inject({ method: 'GET', url: `/posts/${uuid}`, token });
          if (expected[who]?.includes(visibility)) {
            assert.equal(res.statusCode, 200, `${who} reads ${visibility}`);
            assert.equal(body(res).data.uuid, uuid);
          } else {
            assert.deepEqual(errorShape(res), errorShape(missing), `${who} must not see ${visibility}`);
          }
        }
      }
    });

    it('rejects unknown query parameters', async () => {
      const res = await t.inject({
        method: 'GET',
        url: `/posts/${posts.public}?fields=secret`,
        token: owner.token,
      });
      assert.equal(res.statusCode, 400);
      assert.equal(body(res).error.details[0].field, 'fields');
    });

    it('requires a token, and a user for writing', async () => {
      const none = await t.inject({ method: 'GET', url: `/posts/${posts.public}` });
      assert.equal(none.statusCode, 401);
      const guest = await t.inject({ method: 'POST', url: '/posts', token: t.guest, payload: { body: 'x' } });
      assert.equal(guest.statusCode, 403);
      assert.equal(body(guest).error.code, 'login_required');
    });

    it('rejects bad input with 400 and writes nothing', async () => {
      const before = await countRows(t.ctx.db, 'posts');
      const cases = [
        {},
        { body: '' },
        { body: 'x'.repeat(5001) },
        { body: 'x', visibility: 'everyone' },
        { body: 'x', language: 'xx' },
        { body: 'x', network_uuid: 'not-a-uuid' },
        { body: 'x', user_uuid: stranger.uuid },
        { body: 'x', uuid: '0190a000-0000-7000-8000-000000000000' },
        { body: 'x', created_at: '2020-01-01T00:00:00Z' },
      ];
      for (const payload of cases) {
        const res = await t.inject({ method: 'POST', url: '/posts', token: owner.token, payload });
        assert.equal(res.statusCode, 400, JSON.stringify(payload));
        assert.equal(body(res).error.code, 'invalid_request');
        assert.ok(body(res).error.details.length > 0);
      }
      const missingNetwork = await t.inject({
        method: 'POST',
        url: '/posts',
        token: owner.token,
        payload: { body: 'x', network_uuid: '0190a000-0000-7000-8000-000000000000' },
      });
      assert.equal(missingNetwork.statusCode, 404);
      assert.equal(await countRows(t.ctx.db, 'posts'), before);
      const badUpdate = await t.inject({
        method: 'POST',
        url: `/posts/${posts.public}/update`,
        token: owner.token,
        payload: {},
      });
      assert.equal(badUpdate.statusCode, 400);
    });

    it('lets only the owner update or delete; a forged attempt gets 404 and changes nothing', async () => {
      for (const token of [friend.token, stranger.token]) {
        const upd = await t.inject({
          method: 'POST',
          url: `/posts/${posts.public}/update`,
          token,
          payload: { body: 'hacked' },
        });
        assert.equal(upd.statusCode, 404);
        assert.equal(body(upd).error.code, 'object_not_found');
        const del = await t.inject({ method: 'POST', url: `/posts/${posts.public}/delete`, token });
        assert.equal(del.statusCode, 404);
      }
      const guest = await t.inject({
        method: 'POST',
        url: `/posts/${posts.public}/update`,
        token: t.guest,
        payload: { body: 'hacked' },
      });
      assert.equal(guest.statusCode, 403);
      const read = await t.inject({ method: 'GET', url: `/posts/${posts.public}`, token: t.guest });
      assert.equal(body(read).data.body, 'a public post');
      const own = await t.inject({
        method: 'POST',
        url: `/posts/${posts.public}/update`,
        token: owner.token,
        payload: { body: 'edited', visibility: 'friends' },
      });
      assert.equal(own.statusCode, 200);
      assert.equal(body(own).data.body, 'edited');
      assert.equal(body(own).data.visibility, 'friends');
      const hidden = await t.inject({ method: 'GET', url: `/posts/${posts.public}`, token: t.guest });
      assert.equal(hidden.statusCode, 404);
      const back = await t.inject({
        method: 'POST',
        url: `/posts/${posts.public}/update`,
        token: owner.token,
        payload: { visibility: 'public' },
      });
      assert.equal(body(back).data.visibility, 'public');
    });

    it('comments follow their post: create, read, update, delete', async () => {
      // A stranger cannot comment on (or see) the friends-only post; the friend can.
      const refused = await t.inject({
        method: 'POST',
        url: `/posts/${posts.friends}/comments`,
        token: stranger.token,
        payload: { body: 'hi' },
      });
      assert.equal(refused.statusCode, 404);
      assert.equal(body(refused).error.code, 'object_not_found');
      const created = await t.inject({
        method: 'POST',
        url: `/posts/${posts.friends}/comments`,
        token: friend.token,
        payload: { body: 'nice one', language: 'fr' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const c = body(created).data;
      assert.deepEqual(Object.keys(c).sort(), [
        'body',
        'created_at',
        'language',
        'post_uuid',
        'type',
        'updated_at',
        'user_uuid',
        'uuid',
      ]);
      assert.equal(c.type, 'comment');
      assert.equal(c.post_uuid, posts.friends);
      assert.equal(c.language, 'fr');
      for (const [token, status] of [
        [t.guest, 404],
        [stranger.token, 404],
        [friend.token, 200],
        [owner.token, 200],
      ] as const) {
        const res = await t.inject({ method: 'GET', url: `/comments/${c.uuid}`, token });
        assert.equal(res.statusCode, status);
      }
      const guestComment = await t.inject({
        method: 'POST',
        url: `/posts/${posts.public}/comments`,
        token: t.guest,
        payload: { body: 'hi' },
      });
      assert.equal(guestComment.statusCode, 403);
      const bad = await t.inject({
        method: 'POST',
        url: `/posts/${posts.public}/comments`,
        token: stranger.token,
        payload: { body: 'hi', post_uuid: posts.private },
      });
      assert.equal(bad.statusCode, 400);
      // Only the comment's author may change it; the post owner and others get 404.
      for (const token of [owner.token, stranger.token]) {
        const upd = await t.inject({
          method: 'POST',
          url: `/comments/${c.uuid}/update`,
          token,
          payload: { body: 'forged' },
        });
        assert.equal(upd.statusCode, 404);
        const del = await t.inject({ method: 'POST', url: `/comments/${c.uuid}/delete`, token });
        assert.equal(del.statusCode, 404);
      }
      const upd = await t.inject({
        method: 'POST',
        url: `/comments/${c.uuid}/update`,
        token: friend.token,
        payload: { body: 'nicer one' },
      });
      assert.equal(upd.statusCode, 200);
      assert.equal(body(upd).data.body, 'nicer one');
      const del = await t.inject({ method: 'POST', url: `/comments/${c.uuid}/delete`, token: friend.token });
      assert.equal(del.statusCode, 200);
      assert.deepEqual(Object.keys(body(del)).sort(), ['status', 'timestamp']);
      const gone = await t.inject({ method: 'GET', url: `/comments/${c.uuid}`, token: friend.token });
      assert.equal(gone.statusCode, 404);
    });

    it("a comment's author cannot change or delete it while its post is hidden from them, and can once shown", async () => {
      const post = await t.inject({
        method: 'POST',
        url: '/posts',
        token: owner.token,
        payload: { body: 'soon private' },
      });
      const postUuid = body(post).data.uuid;
      const created = await t.inject({
        method: 'POST',
        url: `/posts/${postUuid}/comments`,
        token: stranger.token,
        payload: { body: 'first' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const comment = body(created).data.uuid;
      const setVisibility = async (visibility: string) => {
        const res = await t.inject({
          method: 'POST',
          url: `/posts/${postUuid}/update`,
          token: owner.token,
          payload: { visibility },
        });
        assert.equal(res.statusCode, 200, res.body);
      };
      await setVisibility('private');
      const upd = await t.inject({
        method: 'POST',
        url: `/comments/${comment}/update`,
        token: stranger.token,
        payload: { body: 'edited' },
      });
      // The 404 of a missing comment, as reading it gets: nothing tells the stranger the post still exists.
      assert.deepEqual([upd.statusCode, body(upd).error.code], [404, 'object_not_found']);
      const del = await t.inject({
        method: 'POST',
        url: `/comments/${comment}/delete`,
        token: stranger.token,
      });
      assert.deepEqual([del.statusCode, body(del).error.code], [404, 'object_not_found']);
      const stored = await t.ctx.db
        .selectFrom('comments')
        .select('body')
        .where('uuid', '=', comment)
        .executeTakeFirstOrThrow();
      assert.equal(stored.body, 'first');

      await setVisibility('public');
      const again = await t.inject({
        method: 'POST',
        url: `/comments/${comment}/update`,
        token: stranger.token,
        payload: { body: 'edited' },
      });
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(body(again).data.body, 'edited');
    });

    it('deleting a post deletes its comments, emitting commentDeleted then postDeleted', async () => {
      const p = body(
        await t.inject({ method: 'POST', url: '/posts', token: owner.token, payload: { body: 'to delete' } }),
      ).data;
      const c1 = body(
        await t.inject({
          method: 'POST',
          url: `/posts/${p.uuid}/comments`,
          token: stranger.token,
          payload: { body: 'one' },
        }),
      ).data;
      const seen: string[] = [];
      t.ctx.bus.on(['commentDeleted', 'postDeleted'], async (trx, event) => {
        // Deleted events come before the row goes, in the same transaction.
        const table = event.targetType === 'post' ? 'posts' : 'comments';
        const row = await trx
          .selectFrom(table)
          .select('uuid')
          .where('uuid', '=', event.targetUuid)
          .executeTakeFirst();
        seen.push(`${event.name}:${event.targetUuid}:${row ? 'present' : 'gone'}:${event.actorUuid}`);
      });
      const del = await t.inject({ method: 'POST', url: `/posts/${p.uuid}/delete`, token: owner.token });
      assert.equal(del.statusCode, 200);
      assert.deepEqual(seen, [
        `commentDeleted:${c1.uuid}:present:${stranger.uuid}`,
        `postDeleted:${p.uuid}:present:${owner.uuid}`,
      ]);
      const left = await t.ctx.db
        .selectFrom('comments')
        .select('uuid')
        .where('post_uuid', '=', p.uuid)
        .execute();
      assert.equal(left.length, 0);
      const gone = await t.inject({ method: 'GET', url: `/posts/${p.uuid}`, token: owner.token });
      assert.equal(gone.statusCode, 404);
    });

    it('a subscriber forced to fail rolls the whole write back', async () => {
      failPostCreated = true;
      try {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: stranger.token,
          payload: { body: 'never stored' },
        });
        assert.equal(res.statusCode, 500);
        assert.equal(body(res).error.code, 'internal_error');
      } finally {
        failPostCreated = false;
      }
      const rows = await t.ctx.db
        .selectFrom('posts')
        .select('uuid')
        .where('body', '=', 'never stored')
        .execute();
      assert.equal(rows.length, 0);
    });

    it('a deleted user takes their posts, comments, messages, networks and connections along', async () => {
      const gone = await t.createUser();
      const p = body(
        await t.inject({ method: 'POST', url: '/posts', token: gone.token, payload: { body: 'mine' } }),
      ).data;
      await t.inject({
        method: 'POST',
        url: `/posts/${p.uuid}/comments`,
        token: owner.token,
        payload: { body: 'on their post' },
      });
      await t.inject({
        method: 'POST',
        url: `/posts/${posts.private}/comments`,
        token: owner.token,
        payload: { body: 'own' },
      });
      const theirComment = body(
        await t.inject({
          method: 'POST',
          url: `/posts/${posts.public}/comments`,
          token: gone.token,
          payload: { body: 'theirs' },
        }),
      ).data;
      await t.inject({
        method: 'POST',
        url: '/messages',
        token: owner.token,
        payload: { recipient_uuid: gone.uuid, body: 'hello' },
      });
      const net = body(
        await t.inject({ method: 'POST', url: '/networks', token: gone.token, payload: { name: 'Theirs' } }),
      ).data;
      await t.inject({ method: 'POST', url: `/networks/${net.uuid}/join`, token: owner.token });
      const conn = body(
        await t.inject({
          method: 'POST',
          url: '/connections',
          token: gone.token,
          payload: { user_uuid: owner.uuid },
        }),
      ).data;
      await t.inject({ method: 'POST', url: `/connections/${conn.uuid}/confirm`, token: owner.token });

      const events: string[] = [];
      t.ctx.bus.on(
        ['postDeleted', 'commentDeleted', 'networkDeleted', 'connectionDeleted'],
        async (_trx, e) => {
          events.push(e.name);
        },
      );
      const res = await t.inject({ method: 'POST', url: `/users/${gone.uuid}/delete`, token: gone.token });
      assert.equal(res.statusCode, 200, res.body);
      const db = t.ctx.db;
      const of = gone.uuid;
      assert.equal(
        (await db.selectFrom('posts').select('uuid').where('user_uuid', '=', of).execute()).length,
        0,
      );
      assert.equal(
        (await db.selectFrom('comments').select('uuid').where('user_uuid', '=', of).execute()).length,
        0,
      );
      assert.equal(
        (await db.selectFrom('comments').select('uuid').where('post_uuid', '=', p.uuid).execute()).length,
        0,
      );
      const messages = await db
        .selectFrom('messages')
        .select('uuid')
        .where((eb) => eb.or([eb('user_uuid', '=', of), eb('recipient_uuid', '=', of)]))
        .execute();
      assert.equal(messages.length, 0);
      assert.equal(
        (await db.selectFrom('networks').select('uuid').where('user_uuid', '=', of).execute()).length,
        0,
      );
      const connections = await db
        .selectFrom('connections')
        .select('uuid')
        .where((eb) => eb.or([eb('user_uuid', '=', of), eb('target_user_uuid', '=', of)]))
        .execute();
      assert.equal(connections.length, 0);
      const friends = await db
        .selectFrom('friends')
        .selectAll()
        .where((eb) => eb.or([eb('user_uuid', '=', of), eb('friend_uuid', '=', of)]))
        .execute();
      assert.equal(friends.length, 0);
      const orphan = await t.inject({
        method: 'GET',
        url: `/comments/${theirComment.uuid}`,
        token: owner.token,
      });
      assert.equal(orphan.statusCode, 404);
      const me = await t.ctx.db
        .selectFrom('users')
        .select('network_uuid')
        .where('uuid', '=', owner.uuid)
        .executeTakeFirst();
      assert.equal(me?.network_uuid, null);
      for (const name of ['postDeleted', 'commentDeleted', 'networkDeleted', 'connectionDeleted']) {
        assert.ok(events.includes(name), `${name} emitted`);
      }
    });
  });
}
