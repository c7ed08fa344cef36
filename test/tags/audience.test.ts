import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { body, runCheckCommand, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createComment, createPost, get } from './support.ts';

// What one viewer sees of one tag through every read that applies visibility.
interface View {
  /** GET /tags/{uuid}: 200 or 404. */
  status: number;
  /** GET /tags/{uuid}: the association uuids listed. */
  associations: string[];
  /** GET /tags?filterby[name]=NAME: count.total. */
  listed: number;
  /** GET /tag-associations?filterby[tag_uuid]=UUID: the uuids and count.total. */
  rows: string[];
  total: number;
}

for (const dialect of testDialects()) {
  describe(`an association's visibility follows its target's audience [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    let carol: TestUser;

    // alice and bob are confirmed friends; carol is a stranger to both.
    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'] });
      alice = await t.createUser();
      bob = await t.createUser();
      carol = await t.createUser();
      await connect(alice, bob);
    });
    after(async () => t?.close());

    async function call(method: 'POST' | 'GET', url: string, token: string, payload?: object) {
      const res = await t.inject({ method, url, token, ...(payload ? { payload } : {}) });
      assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
      return body(res).data;
    }

    async function connect(a: TestUser, b: TestUser): Promise<string> {
      const req = await call('POST', '/connections', a.token, { user_uuid: b.uuid });
      await call('POST', `/connections/${req.uuid}/confirm`, b.token);
      return req.uuid;
    }

    /**
     * Tags a connection as a writer other than the API would (the API does not tag connections; events or imports
     * may, and the triggers cover them), keeping the tag's count as such a writer must (`check` verifies it).
     * Returns the association's uuid.
     */
    async function tagConnection(tagUuid: string, user: TestUser, connection: string): Promise<string> {
      const uuid = uuidv7();
      const now = nowIso();
      await t.ctx.db
        .insertInto('tag_associations')
        .values({
          uuid,
          tag_uuid: tagUuid,
          user_uuid: user.uuid,
          target_uuid: connection,
          target_type: 'connection',
          language: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await t.ctx.db
        .updateTable('tags')
        .set((eb) => ({ associations_count: eb('associations_count', '+', 1) }))
        .where('uuid', '=', tagUuid)
        .execute();
      return uuid;
    }

    async function view(tag: { uuid: string; name: string }, token: string): Promise<View> {
      const one = await t.inject({ method: 'GET', url: `/tags/${tag.uuid}`, token });
      const list = await get(t, `/tags?filterby[name]=${tag.name}`, token);
      const rows = await get(t, `/tag-associations?filterby[tag_uuid]=${tag.uuid}&limit=100`, token);
      return {
        status: one.statusCode,
        associations: one.statusCode === 200 ? body(one).data.associations : [],
        listed: list.count.total,
        rows: rows.data.map((r: { uuid: string }) => r.uuid),
        total: rows.count.total,
      };
    }

    /**
     * Asserts who sees the tag's one association `assoc`: `seeing` see it everywhere, the others nowhere. The others
     * still see a tag made through /tags/create, without the association: it is public whatever its uses.
     */
    async function expectSeenBy(tag: { uuid: string; name: string }, assoc: string, seeing: string[]) {
      const row = await t.ctx.db
        .selectFrom('tags')
        .select('standalone')
        .where('uuid', '=', tag.uuid)
        .executeTakeFirstOrThrow();
      const unseen: View = row.standalone
        ? { status: 200, associations: [], listed: 1, rows: [], total: 0 }
        : { status: 404, associations: [], listed: 0, rows: [], total: 0 };
      const viewers: [string, string][] = [
        ['guest', t.guest],
        ['alice', alice.token],
        ['bob', bob.token],
        ['carol', carol.token],
      ];
      for (const [name, token] of viewers) {
        const v = await view(tag, token);
        const expected: View = seeing.includes(name)
          ? { status: 200, associations: [assoc], listed: 1, rows: [assoc], total: 1 }
          : unseen;
        assert.deepEqual(v, expected, `what ${name} sees of #${tag.name}`);
      }
    }

    const runCheck = () => runCheckCommand(t.ctx);

    async function ownTag(name: string, owner: TestUser) {
      const b = await get(t, `/tags?filterby[name]=${name}`, owner.token);
      assert.equal(b.data.length, 1, `${name} is visible to its user`);
      return b.data[0] as { uuid: string; name: string; associations: string[] };
    }

    async function trending(): Promise<string[]> {
      const b = await get(t, '/tags/trending?window=2&limit=50');
      return b.data.map((x: { name: string }) => x.name);
    }

    it("a post's visibility change reaches its tags, lists, counts and trending at once", async () => {
      const post = await createPost(t, alice, 'audience test #shifting');
      const tag = await ownTag('shifting', alice);
      const [assoc] = tag.associations;
      assert.ok(assoc);
      await expectSeenBy(tag, assoc, ['guest', 'alice', 'bob', 'carol']);
      assert.ok((await trending()).includes('shifting'));

      await call('POST', `/posts/${post}/update`, alice.token, { visibility: 'private' });
      await expectSeenBy(tag, assoc, ['alice']);
      assert.ok(!(await trending()).includes('shifting'), 'a private use leaves trending');

      await call('POST', `/posts/${post}/update`, alice.token, { visibility: 'friends' });
      await expectSeenBy(tag, assoc, ['alice', 'bob']);
      assert.ok(!(await trending()).includes('shifting'));

      await call('POST', `/posts/${post}/update`, alice.token, { visibility: 'public' });
      await expectSeenBy(tag, assoc, ['guest', 'alice', 'bob', 'carol']);
      assert.ok((await trending()).includes('shifting'));
    });

    it("a comment's associations follow its post, whoever wrote the comment", async () => {
      const post = await createPost(t, alice, 'open thread');
      await createComment(t, carol, post, 'my reply #commentaudience');
      const tag = await ownTag('commentaudience', carol);
      const [assoc] = tag.associations;
      assert.ok(assoc);
      await expectSeenBy(tag, assoc, ['guest', 'alice', 'bob', 'carol']);
      await call('POST', `/posts/${post}/update`, alice.token, { visibility: 'friends' });
      // The post's audience decides: carol wrote the comment but may no longer see the post it is under.
      await expectSeenBy(tag, assoc, ['alice', 'bob']);
      await call('POST', `/posts/${post}/update`, alice.token, { visibility: 'private' });
      await expectSeenBy(tag, assoc, ['alice']);
    });

    it("a media item's visibility decides who sees its associations", async () => {
      const media = uuidv7();
      const now = nowIso();
      await t.ctx.db
        .insertInto('media')
        .values({
          uuid: media,
          user_uuid: alice.uuid,
          title: 'photo',
          description: null,
          content_type: 'image/png',
          size: 1,
          visibility: 'public',
          language: 'en',
          storage_key: `k-${media}`,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const tag = await call('POST', '/tags/create', alice.token, {
        name: 'mediaaudience',
        tag_type: 'hashtag',
      });
      const assoc = await call('POST', '/tag-association', alice.token, {
        tag_uuid: tag.uuid,
        target_uuid: media,
        target_type: 'media',
      });
      await expectSeenBy(tag, assoc.uuid, ['guest', 'alice', 'bob', 'carol']);
      // No API operation changes a media item's visibility yet; any writer that does is followed by the triggers.
      await t.ctx.db.updateTable('media').set({ visibility: 'friends' }).where('uuid', '=', media).execute();
      await expectSeenBy(tag, assoc.uuid, ['alice', 'bob']);
      await t.ctx.db.updateTable('media').set({ visibility: 'private' }).where('uuid', '=', media).execute();
      await expectSeenBy(tag, assoc.uuid, ['alice']);
    });

    it("messages' associations are seen by their sender and recipient only", async () => {
      const message = await call('POST', '/messages', alice.token, {
        recipient_uuid: carol.uuid,
        body: 'hi',
      });
      const tag = await call('POST', '/tags/create', alice.token, {
        name: 'dmaudience',
        tag_type: 'hashtag',
      });
      const assoc = await call('POST', '/tag-association', alice.token, {
        tag_uuid: tag.uuid,
        target_uuid: message.uuid,
        target_type: 'messages',
      });
      // bob is alice's friend, which grants nothing on a message.
      await expectSeenBy(tag, assoc.uuid, ['alice', 'carol']);
    });

    it("a deleted user's messages take the other party's associations and their count along", async () => {
      const leaving = await t.createUser();
      const message = await call('POST', '/messages', leaving.token, {
        recipient_uuid: carol.uuid,
        body: 'so long',
      });
      const tag = await call('POST', '/tags/create', carol.token, {
        name: 'farewellnote',
        tag_type: 'hashtag',
      });
      const assoc = await call('POST', '/tag-association', carol.token, {
        tag_uuid: tag.uuid,
        target_uuid: message.uuid,
        target_type: 'messages',
      });
      await expectSeenBy(tag, assoc.uuid, ['carol']);
      await call('POST', `/users/${leaving.uuid}/delete`, leaving.token);

      const stored = await t.ctx.db
        .selectFrom('tag_associations')
        .select('uuid')
        .where('tag_uuid', '=', tag.uuid)
        .execute();
      assert.deepEqual(stored, [], 'the association went with the message');
      const own = await t.inject({
        method: 'GET',
        url: `/tags/${tag.uuid}`,
        token: carol.token,
        headers: { 'cache-control': 'no-cache' },
      });
      assert.equal(own.statusCode, 200, own.body);
      assert.equal(body(own).data.associations_count, 0);
      const check = await runCheck();
      assert.equal(check.code, 0, check.out);
    });

    it('a post with more tags than one SQLite statement can bind is deleted, every count taken back', async () => {
      // 11,000 tags, each associated with the post once, written as a bulk importer would (the API caps a text at
      // 50 hashtags; with tag-associations.create switched on, anyone may add more).
      const post = await createPost(t, alice, 'crowded');
      const now = nowIso();
      const tags = Array.from({ length: 11_000 }, (_, i) => ({
        uuid: uuidv7(),
        name: `crowd${i}`,
        name_key: `crowd${i}`,
        tag_type: 'hashtag',
        associations_count: 1,
        created_at: now,
        updated_at: now,
      }));
      for (let i = 0; i < tags.length; i += 500) {
        const slice = tags.slice(i, i + 500);
        await t.ctx.db.insertInto('tags').values(slice).execute();
        await t.ctx.db
          .insertInto('tag_associations')
          .values(
            slice.map((tag) => ({
              uuid: uuidv7(),
              tag_uuid: tag.uuid,
              user_uuid: bob.uuid,
              target_uuid: post,
              target_type: 'post',
              language: 'en',
              created_at: now,
              updated_at: now,
            })),
          )
          .execute();
      }
      const del = await t.inject({ method: 'POST', url: `/posts/${post}/delete`, token: alice.token });
      assert.equal(del.statusCode, 200, del.body);
      const left = await t.ctx.db
        .selectFrom('tags')
        .select((eb) => [
          eb.fn.sum<number>('associations_count').as('counted'),
          eb.fn.countAll<number>().as('n'),
        ])
        .where('name', 'like', 'crowd%')
        .executeTakeFirstOrThrow();
      assert.deepEqual([Number(left.counted), Number(left.n)], [0, 11_000]);
      const check = await runCheck();
      assert.equal(check.code, 0, check.out);
    });

    it("a connection's associations are seen by its two sides, by no one once it is deleted", async () => {
      const dave = await t.createUser();
      const connection = await connect(carol, dave);
      const tag = await call('POST', '/tags/create', carol.token, {
        name: 'linkaudience',
        tag_type: 'hashtag',
      });
      const assoc = await tagConnection(tag.uuid, carol, connection);
      await expectSeenBy(tag, assoc, ['carol']);
      const asDave = await view(tag, dave.token);
      assert.deepEqual(
        [asDave.status, asDave.rows, asDave.total],
        [200, [assoc], 1],
        'the other side sees it',
      );
      await call('POST', `/connections/${connection}/delete`, dave.token);
      await expectSeenBy(tag, assoc, []);
      const row = await t.ctx.db
        .selectFrom('tag_associations')
        .select(['audience', 'audience_owner', 'audience_other'])
        .where('uuid', '=', assoc)
        .executeTakeFirstOrThrow();
      assert.deepEqual(row, { audience: 'none', audience_owner: null, audience_other: null });
    });

    it('an association moved to another target takes the new audience', async () => {
      const hidden = await createPost(t, alice, 'just me', { visibility: 'private' });
      const open = await createPost(t, bob, 'everyone');
      const tag = await call('POST', '/tags/create', alice.token, {
        name: 'movingaudience',
        tag_type: 'hashtag',
      });
      const assoc = await call('POST', '/tag-association', alice.token, {
        tag_uuid: tag.uuid,
        target_uuid: hidden,
        target_type: 'post',
      });
      await expectSeenBy(tag, assoc.uuid, ['alice']);
      await call('POST', `/tag-associations/${assoc.uuid}`, alice.token, {
        _method: 'update',
        target_uuid: open,
      });
      await expectSeenBy(tag, assoc.uuid, ['guest', 'alice', 'bob', 'carol']);
      const message = await call('POST', '/messages', alice.token, {
        recipient_uuid: bob.uuid,
        body: 'psst',
      });
      const res = await t.inject({
        method: 'PATCH',
        url: `/tag-associations/${assoc.uuid}`,
        token: alice.token,
        payload: { target_uuid: message.uuid, target_type: 'messages' },
      });
      assert.equal(res.statusCode, 200, res.body);
      await expectSeenBy(tag, assoc.uuid, ['alice', 'bob']);
    });

    it('check finds every association in step with its target, and reports a tampered one', async () => {
      // A deleted user takes their posts, the comments under them and every association of those along.
      const erin = await t.createUser();
      const gone = await createPost(t, erin, 'farewell #leavingaudience');
      await createComment(t, bob, gone, 'bye #leavingaudience');
      await call('POST', `/users/${erin.uuid}/delete`, erin.token);
      const clean = await runCheck();
      assert.equal(clean.code, 0, clean.out);
      assert.match(clean.out, /check OK/);

      const post = await createPost(t, alice, 'not for you #tamperaudience', { visibility: 'private' });
      const tag = await ownTag('tamperaudience', alice);
      const [assoc] = tag.associations;
      assert.ok(assoc);
      await t.ctx.db
        .updateTable('tag_associations')
        .set({ audience: 'public' })
        .where('uuid', '=', assoc)
        .execute();
      const tampered = await runCheck();
      assert.equal(tampered.code, 1);
      assert.match(tampered.out, new RegExp(`audience mismatch: ${assoc} on post ${post} stored \\(public,`));
      assert.match(tampered.out, /check FAILED: 1 tag associations/);
      // The repair the message names: re-pointing a row at its target recomputes it.
      await t.ctx.db
        .updateTable('tag_associations')
        .set((eb) => ({ target_uuid: eb.ref('target_uuid') }))
        .where('uuid', '=', assoc)
        .execute();
      assert.equal((await runCheck()).code, 0);
      await expectSeenBy({ uuid: tag.uuid, name: tag.name }, assoc, ['alice']);
    });

    it('check reports a tag whose count differs from its associations, and the repair it names clears it', async () => {
      await createPost(t, alice, 'counted #tampercount');
      await createPost(t, bob, 'counted too #tampercount');
      const before = await runCheck();
      assert.equal(before.code, 0, before.out);
      assert.match(before.out, /every tag count matches its associations/);
      const tag = await ownTag('tampercount', alice);
      // And a tag without any association that claims one.
      const unused = await call('POST', '/tags/create', alice.token, {
        name: 'tamperunused',
        tag_type: 'hashtag',
      });
      await t.ctx.db
        .updateTable('tags')
        .set({ associations_count: 5 })
        .where('uuid', '=', tag.uuid)
        .execute();
      await t.ctx.db
        .updateTable('tags')
        .set({ associations_count: 1 })
        .where('uuid', '=', unused.uuid)
        .execute();
      const tampered = await runCheck();
      assert.equal(tampered.code, 1);
      assert.match(
        tampered.out,
        new RegExp(`tag count mismatch: hashtag ${tag.uuid} \\(tampercount\\) stored 5, associations 2`),
      );
      assert.match(
        tampered.out,
        new RegExp(`tag count mismatch: hashtag ${unused.uuid} \\(tamperunused\\) stored 1, associations 0`),
      );
      assert.match(tampered.out, /check FAILED: 2 tags have an associations_count/);
      // The repair the message names.
      const repair = /repair, with writes stopped: (UPDATE tags .*)\)$/m.exec(tampered.out)?.[1];
      assert.ok(repair, tampered.out);
      await sql.raw(repair).execute(t.ctx.db);
      assert.equal((await runCheck()).code, 0);
    });
    it("one tag's total under every audience at once is what each viewer lists, with or without other filters", async () => {
      const dave = await t.createUser();
      await createPost(t, alice, 'mixed one #mixedtotal');
      await createPost(t, carol, 'mixed two #mixedtotal');
      await createPost(t, alice, 'mixed three #mixedtotal', { visibility: 'friends' });
      await createPost(t, alice, 'mixed four #mixedtotal', { visibility: 'private' });
      await createPost(t, bob, 'mixed five #mixedtotal', { visibility: 'private' });
      const tag = await ownTag('mixedtotal', alice);
      const message = await call('POST', '/messages', alice.token, { recipient_uuid: bob.uuid, body: 'hi' });
      await call('POST', '/tag-association', alice.token, {
        tag_uuid: tag.uuid,
        target_uuid: message.uuid,
        target_type: 'messages',
      });
      // A connection's association outlives the connection with the audience `none`: counted by the tag, seen by no
      // one.
      const connection = await connect(carol, dave);
      await tagConnection(tag.uuid, carol, connection);
      await call('POST', `/connections/${connection}/delete`, carol.token);

      const total = async (query: string, token: string) => {
        const res = await t.inject({
          method: 'GET',
          url: `/tag-associations?${query}&limit=100`,
          token,
          headers: { 'cache-control': 'no-cache' },
        });
        assert.equal(res.statusCode, 200, res.body);
        const b = body(res);
        assert.equal(b.count.total, b.data.length, `${query}: the total is what the page lists`);
        return b.count.total as number;
      };
      const one = `filterby[tag_uuid]=${tag.uuid}`;
      const byAlice = `${one}&filterby[user_uuid]=${alice.uuid}`;
      // Two public posts; alice also sees her friends-only and private posts and her message; bob the friends-only
      // post, his private post and the message; carol and dave only the public ones.
      const expected: [string, string, number, number][] = [
        ['guest', t.guest, 2, 1],
        ['alice', alice.token, 5, 4],
        ['bob', bob.token, 5, 3],
        ['carol', carol.token, 2, 1],
        ['dave', dave.token, 2, 1],
      ];
      for (const [name, token, all, alices] of expected) {
        assert.equal(await total(one, token), all, `${name}: the tag alone`);
        assert.equal(await total(byAlice, token), alices, `${name}: the tag and alice's uses`);
      }
      const stored = await get(t, `/tags/${tag.uuid}`, alice.token);
      assert.equal(
        stored.data.associations_count,
        7,
        'the tag counts every association, the unseen ones too',
      );
      assert.equal(
        await total(`filterby[tag_uuid]=${uuidv7()}`, alice.token),
        0,
        'a tag that does not exist',
      );

      // The one-tag total reads the stored count: a count that `check` reports shows there, not under two filters.
      await t.ctx.db
        .updateTable('tags')
        .set({ associations_count: 8 })
        .where('uuid', '=', tag.uuid)
        .execute();
      try {
        const res = await t.inject({
          method: 'GET',
          url: `/tag-associations?${one}&limit=100`,
          token: t.guest,
          headers: { 'cache-control': 'no-cache' },
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(body(res).count.total, 3);
        assert.equal(await total(byAlice, t.guest), 1);
        assert.equal((await runCheck()).code, 1);
      } finally {
        await t.ctx.db
          .updateTable('tags')
          .set({ associations_count: 7 })
          .where('uuid', '=', tag.uuid)
          .execute();
      }
      assert.equal((await runCheck()).code, 0);
    });
  });
}
