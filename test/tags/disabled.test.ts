import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { associationsOf, createPost, findTag, get } from './support.ts';

const MISSING = '0190a1b2-0000-7000-8000-000000000001';

for (const dialect of testDialects()) {
  describe(`disabled tag operations, default configuration [${dialect.name}]`, () => {
    let t: TestApp;
    let admin: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      admin = await t.createUser(undefined, 'admin');
    });
    after(async () => t?.close());

    it('answers 404 operation_disabled for every switchable write, even without a token', async () => {
      const calls: {
        method: 'POST' | 'PUT' | 'DELETE' | 'PATCH';
        url: string;
        payload?: object;
        op: RegExp;
      }[] = [
        {
          method: 'POST',
          url: '/tags/create',
          payload: { name: 'x', tag_type: 'hashtag' },
          op: /tags\.create/,
        },
        { method: 'POST', url: `/tags/${MISSING}/delete`, op: /tags\.delete/ },
        {
          method: 'PUT',
          url: `/tags/${MISSING}/update`,
          payload: { name: 'x', tag_type: 'hashtag' },
          op: /tags\.update/,
        },
        {
          method: 'POST',
          url: '/tag-association',
          payload: { tag_uuid: MISSING, target_uuid: MISSING, target_type: 'post' },
          op: /tag-associations\.create/,
        },
        {
          method: 'POST',
          url: `/tag-associations/${MISSING}`,
          payload: { _method: 'delete' },
          op: /tag-associations\.delete/,
        },
        { method: 'POST', url: `/tag-associations/${MISSING}`, op: /tag-associations\.update/ },
        { method: 'DELETE', url: `/tag-associations/${MISSING}`, op: /tag-associations\.delete/ },
        {
          method: 'PATCH',
          url: `/tag-associations/${MISSING}`,
          payload: { tag_uuid: MISSING },
          op: /tag-associations\.update/,
        },
      ];
      for (const c of calls) {
        for (const token of [undefined, t.guest, admin.token]) {
          const res = await t.inject({ method: c.method, url: c.url, token, payload: c.payload });
          assert.equal(res.statusCode, 404, `${c.method} ${c.url}`);
          assert.equal(body(res).error.code, 'operation_disabled');
          assert.match(body(res).error.message, c.op);
          assert.match(body(res).error.message, /ENABLED_OPERATIONS/);
        }
      }
      assert.equal((await get(t, '/tags?filterby[tag_type]=hashtag')).count.total, 0, 'nothing was written');
    });
  });

  describe(`switchable tag operations, ENABLED_OPERATIONS=all [${dialect.name}]`, () => {
    let t: TestApp;
    let owner: TestUser;
    let stranger: TestUser;
    let admin: TestUser;
    let post: string;
    let hidden: string;
    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'] });
      owner = await t.createUser();
      stranger = await t.createUser();
      admin = await t.createUser(undefined, 'admin');
      post = await createPost(t, owner, 'a post about #things', { language: 'de' });
      hidden = await createPost(t, owner, 'private', { visibility: 'private' });
    });
    after(async () => t?.close());

    const create = (token: string | undefined, payload: object) =>
      t.inject({ method: 'POST', url: '/tags/create', token, payload });

    it('creates tags for logged-in users; 409 on a normalized clash; validates names', async () => {
      const res = await create(stranger.token, { name: '#Crème', tag_type: 'hashtag' });
      assert.equal(res.statusCode, 201, res.body);
      const tag = body(res).data;
      assert.equal(tag.name, 'Crème');
      assert.equal(tag.type, 'tag');
      assert.deepEqual(tag.associations, []);
      assert.equal(tag.associations_count, 0);
      const clash = await create(owner.token, { name: 'CREME', tag_type: 'hashtag' });
      assert.equal(clash.statusCode, 409);
      assert.equal(body(clash).error.code, 'conflict');
      const otherType = await create(owner.token, { name: 'creme', tag_type: 'mention' });
      assert.equal(otherType.statusCode, 201, 'uniqueness is per tag type');
      // 100 characters, counted after NFC: typed decomposed (200 code points) they are still 100.
      const decomposed = await create(owner.token, {
        name: 'é'.repeat(100).normalize('NFD'),
        tag_type: 'hashtag',
      });
      assert.equal(decomposed.statusCode, 201, decomposed.body);
      assert.equal(body(decomposed).data.name, 'é'.repeat(100));
      const over = await create(owner.token, { name: 'é'.repeat(101).normalize('NFD'), tag_type: 'hashtag' });
      assert.equal(over.statusCode, 400, over.body);
      assert.equal((await create(t.guest, { name: 'g', tag_type: 'hashtag' })).statusCode, 403);
      assert.equal((await create(undefined, { name: 'g', tag_type: 'hashtag' })).statusCode, 401);
      for (const payload of [
        { name: '', tag_type: 'hashtag' },
        { name: 'two words', tag_type: 'hashtag' },
        { name: '123', tag_type: 'hashtag' },
        { name: '_', tag_type: 'hashtag' },
        { name: '#___', tag_type: 'hashtag' },
        { name: 'x'.repeat(101), tag_type: 'hashtag' },
        { name: 'meh', tag_type: 'emotion' },
        { name: 'ok', tag_type: 'colour' },
        { name: 'ok' },
        { name: 'ok', tag_type: 'hashtag', associations_count: 5 },
      ]) {
        const r = await create(owner.token, payload);
        assert.equal(r.statusCode, 400, JSON.stringify(payload));
        assert.equal(body(r).error.code, 'invalid_request');
      }
      const emotion = await create(owner.token, { name: 'like', tag_type: 'emotion' });
      assert.equal(emotion.statusCode, 409, 'the configured emotions exist already');
    });

    it('updates tags for admins only; 409 on a clash', async () => {
      const tag = body(await create(owner.token, { name: 'oldname', tag_type: 'hashtag' })).data;
      const put = (token: string | undefined, payload: object, uuid = tag.uuid) =>
        t.inject({ method: 'PUT', url: `/tags/${uuid}/update`, token, payload });
      assert.equal((await put(owner.token, { name: 'newname', tag_type: 'hashtag' })).statusCode, 403);
      assert.equal((await put(t.guest, { name: 'newname', tag_type: 'hashtag' })).statusCode, 403);
      assert.equal((await put(undefined, { name: 'newname', tag_type: 'hashtag' })).statusCode, 401);
      const ok = await put(admin.token, { name: 'NewName', tag_type: 'hashtag' });
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(body(ok).data.name, 'NewName');
      assert.equal((await findTag(t, 'hashtag', 'newname')).uuid, tag.uuid);
      const clash = await put(admin.token, { name: '#THINGS', tag_type: 'hashtag' });
      assert.equal(clash.statusCode, 409);
      const same = await put(admin.token, { name: 'newNAME', tag_type: 'hashtag' });
      assert.equal(same.statusCode, 200, 'respelling a tag is no clash with itself');
      assert.equal((await put(admin.token, { name: 'x' })).statusCode, 400);
      assert.equal((await put(admin.token, { name: 'x', tag_type: 'hashtag' }, MISSING)).statusCode, 404);
    });

    it('two renames racing to one name: one wins, the other is 409, never 500', async () => {
      for (let round = 0; round < 10; round++) {
        const a = body(await create(owner.token, { name: `racea${round}`, tag_type: 'mention' })).data;
        const b = body(await create(owner.token, { name: `raceb${round}`, tag_type: 'mention' })).data;
        const rename = (uuid: string) =>
          t.inject({
            method: 'PUT',
            url: `/tags/${uuid}/update`,
            token: admin.token,
            payload: { name: `racewin${round}`, tag_type: 'mention' },
          });
        const statuses = (await Promise.all([rename(a.uuid), rename(b.uuid)]))
          .map((r) => r.statusCode)
          .sort();
        assert.deepEqual(statuses, [200, 409], `round ${round}`);
      }
    });

    it('deletes tags for admins only, with their associations; the body takes no properties', async () => {
      const things = await findTag(t, 'hashtag', 'things');
      assert.equal(things.associations_count, 1);
      const del = (token: string | undefined, payload?: object) =>
        t.inject({ method: 'POST', url: `/tags/${things.uuid}/delete`, token, payload });
      assert.equal((await del(owner.token)).statusCode, 403);
      assert.equal((await del(t.guest)).statusCode, 403);
      const withBody = await del(admin.token, { force: true });
      assert.equal(withBody.statusCode, 400);
      assert.equal(body(withBody).error.code, 'invalid_request');
      const ok = await del(admin.token);
      assert.equal(ok.statusCode, 200, ok.body);
      assert.deepEqual(Object.keys(body(ok)).sort(), ['status', 'timestamp']);
      assert.equal((await get(t, `/tag-associations?filterby[tag_uuid]=${things.uuid}`)).count.total, 0);
      assert.equal((await del(admin.token)).statusCode, 404);
    });

    it('an emotion tag can be neither deleted nor retyped: 400, its reactions and their karma untouched', async () => {
      const love = await findTag(t, 'emotion', 'love');
      const target = await createPost(t, owner, 'loved');
      const react = await t.inject({
        method: 'POST',
        url: `/posts/${target}/emotions`,
        token: stranger.token,
        payload: { name: 'love' },
      });
      assert.equal(react.statusCode, 201, react.body);
      const karmaOf = async () =>
        body(await t.inject({ method: 'GET', url: `/users/${owner.uuid}`, token: owner.token })).data.karma;
      const before = await karmaOf();
      const del = await t.inject({ method: 'POST', url: `/tags/${love.uuid}/delete`, token: admin.token });
      assert.equal(del.statusCode, 400, del.body);
      assert.equal(body(del).error.code, 'invalid_request');
      assert.match(body(del).error.message, /configured set/);
      const retype = await t.inject({
        method: 'PUT',
        url: `/tags/${love.uuid}/update`,
        token: admin.token,
        payload: { name: 'love', tag_type: 'hashtag' },
      });
      assert.equal(retype.statusCode, 400, retype.body);
      assert.match(body(retype).error.message, /tag_type/);
      const after = await findTag(t, 'emotion', 'love');
      assert.equal(after.uuid, love.uuid);
      assert.ok(after.associations.includes(body(react).data.uuid), 'the reaction is still there');
      assert.equal(await karmaOf(), before);
    });

    it('creates associations as the caller, for visible targets only; 409 on a duplicate', async () => {
      const tag = body(await create(owner.token, { name: 'manual', tag_type: 'hashtag' })).data;
      const add = (token: string | undefined, payload: object) =>
        t.inject({ method: 'POST', url: '/tag-association', token, payload });
      const payload = { tag_uuid: tag.uuid, target_uuid: post, target_type: 'post' };
      assert.equal((await add(t.guest, payload)).statusCode, 403);
      assert.equal((await add(undefined, payload)).statusCode, 401);
      const res = await add(stranger.token, payload);
      assert.equal(res.statusCode, 201, res.body);
      const a = body(res).data;
      assert.equal(a.user_uuid, stranger.uuid);
      assert.equal(a.type, 'tag_association');
      assert.equal((await add(stranger.token, payload)).statusCode, 409);
      assert.equal((await findTag(t, 'hashtag', 'manual')).associations_count, 1);
      const de = await get(t, `/tag-associations?language=de&filterby[tag_uuid]=${tag.uuid}`);
      assert.equal(de.count.total, 1, "the association carries the target's language");
      const invisible = await add(stranger.token, { ...payload, target_uuid: hidden });
      assert.equal(invisible.statusCode, 404);
      const mine = await add(owner.token, { ...payload, target_uuid: hidden });
      assert.equal(mine.statusCode, 201);
      const noTag = await add(stranger.token, { ...payload, tag_uuid: MISSING });
      assert.equal(noTag.statusCode, 404);
      const user = await add(stranger.token, {
        tag_uuid: tag.uuid,
        target_uuid: owner.uuid,
        target_type: 'user',
      });
      assert.equal(user.statusCode, 201);
      // A user's language edit reaches the copy the language filter reads.
      const onUser = `/tag-associations?filterby[target_uuid]=${owner.uuid}`;
      const before = (await get(t, `${onUser}&language=en`)).count.total;
      assert.equal(before, 1, 'the new user starts in English');
      const edit = await t.inject({
        method: 'POST',
        url: `/users/${owner.uuid}/update`,
        token: owner.token,
        payload: { language: 'fr' },
      });
      assert.equal(edit.statusCode, 200, edit.body);
      assert.equal((await get(t, `${onUser}&language=fr`)).count.total, 1);
      assert.equal((await get(t, `${onUser}&language=en`)).count.total, 0);
      const badType = await add(stranger.token, { ...payload, target_type: 'planet' });
      assert.equal(badType.statusCode, 400);
    });

    it('tells delete from update on POST /tag-associations/{uuid}; neither is ambiguous_operation', async () => {
      const tag = body(await create(owner.token, { name: 'switchy', tag_type: 'hashtag' })).data;
      const other = body(await create(owner.token, { name: 'other', tag_type: 'hashtag' })).data;
      const made = await t.inject({
        method: 'POST',
        url: '/tag-association',
        token: stranger.token,
        payload: { tag_uuid: tag.uuid, target_uuid: post, target_type: 'post' },
      });
      const a = body(made).data;
      const url = `/tag-associations/${a.uuid}`;

      const neither = await t.inject({ method: 'POST', url, token: stranger.token, payload: {} });
      assert.equal(neither.statusCode, 400);
      assert.equal(body(neither).error.code, 'ambiguous_operation');
      const bare = await t.inject({ method: 'POST', url, token: stranger.token });
      assert.equal(body(bare).error.code, 'ambiguous_operation');
      const disagree = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        headers: { 'x-http-method-override': 'DELETE' },
        payload: { _method: 'update' },
      });
      assert.equal(body(disagree).error.code, 'ambiguous_operation');
      const badMethod = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        payload: { _method: 'erase' },
      });
      assert.equal(badMethod.statusCode, 400);
      assert.equal(body(badMethod).error.code, 'invalid_request');

      // Owner access: another user and a guest are answered as if it did not exist.
      const foreign = await t.inject({
        method: 'POST',
        url,
        token: owner.token,
        payload: { _method: 'delete' },
      });
      assert.equal(foreign.statusCode, 404);
      assert.equal(body(foreign).error.code, 'object_not_found');
      const guest = await t.inject({ method: 'POST', url, token: t.guest, payload: { _method: 'delete' } });
      assert.equal(guest.statusCode, 403);

      const upd = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        headers: { 'x-http-method-override': 'PATCH' },
        payload: { tag_uuid: other.uuid },
      });
      assert.equal(upd.statusCode, 200, upd.body);
      assert.equal(body(upd).data.tag_uuid, other.uuid);
      assert.equal((await findTag(t, 'hashtag', 'switchy')).associations_count, 0);
      assert.equal((await findTag(t, 'hashtag', 'other')).associations_count, 1);
      const form = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `_method=update&target_uuid=${owner.uuid}&target_type=user`,
      });
      assert.equal(form.statusCode, 200, form.body);
      assert.equal(body(form).data.target_type, 'user');
      const emptyUpdate = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        payload: { _method: 'update' },
      });
      assert.equal(emptyUpdate.statusCode, 400);
      const invisible = await t.inject({
        method: 'PATCH',
        url,
        token: stranger.token,
        payload: { target_uuid: hidden, target_type: 'post' },
      });
      assert.equal(invisible.statusCode, 404);
      const deleteWithFields = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        payload: { _method: 'delete', tag_uuid: tag.uuid },
      });
      assert.equal(deleteWithFields.statusCode, 400);

      const del = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        headers: { 'x-http-method-override': 'delete' },
      });
      assert.equal(del.statusCode, 200, del.body);
      assert.deepEqual(Object.keys(body(del)).sort(), ['status', 'timestamp']);
      assert.equal((await findTag(t, 'hashtag', 'other')).associations_count, 0);
      const gone = await t.inject({
        method: 'POST',
        url,
        token: stranger.token,
        payload: { _method: 'delete' },
      });
      assert.equal(gone.statusCode, 404);
    });

    it('takes association updates sent at once one after the other: exact counts, a clash is a 409', async () => {
      // PostgreSQL: both updates read the old tag and each moved the counts (off by one on each side), and two
      // associations moved onto one key at once broke its unique constraint (a 500).
      const hashtag = async (name: string) =>
        body(await create(owner.token, { name, tag_type: 'hashtag' })).data.uuid as string;
      const from = await hashtag('racefrom');
      const to = await hashtag('raceto');
      const third = await hashtag('racethird');
      const fourth = await hashtag('racefourth');
      const associate = async (tag: string) =>
        body(
          await t.inject({
            method: 'POST',
            url: '/tag-association',
            token: stranger.token,
            payload: { tag_uuid: tag, target_uuid: post, target_type: 'post' },
          }),
        ).data.uuid as string;
      const patch = (uuid: string, tag: string) =>
        t.inject({
          method: 'PATCH',
          url: `/tag-associations/${uuid}`,
          token: stranger.token,
          payload: { tag_uuid: tag },
        });
      const count = async (tag: string) => (await get(t, `/tags/${tag}`)).data.associations_count as number;
      const moved = await associate(from);
      const same = await Promise.all([patch(moved, to), patch(moved, to), patch(moved, to)]);
      assert.deepEqual(
        same.map((r) => r.statusCode),
        [200, 200, 200],
      );
      assert.deepEqual([await count(from), await count(to)], [0, 1]);
      // Two associations of one user and target moved onto one tag at once: one moves, the other is a 409.
      const clash = await Promise.all([
        patch(await associate(from), fourth),
        patch(await associate(third), fourth),
      ]);
      assert.deepEqual(clash.map((r) => r.statusCode).sort(), [200, 409]);
      assert.ok(clash.every((r) => r.statusCode === 200 || body(r).error.code === 'conflict'));
      assert.equal(await count(fourth), 1);
      assert.equal((await count(from)) + (await count(third)), 1);
    });

    it('a creator cannot delete or change an association whose target is hidden from them; admins still can', async () => {
      const shown = await createPost(t, owner, 'soon hidden');
      const react = await t.inject({
        method: 'POST',
        url: `/posts/${shown}/emotions`,
        token: stranger.token,
        payload: { name: 'love' },
      });
      assert.equal(react.statusCode, 201, react.body);
      const url = `/tag-associations/${body(react).data.uuid}`;
      const hide = await t.inject({
        method: 'POST',
        url: `/posts/${shown}/update`,
        token: owner.token,
        payload: { visibility: 'private' },
      });
      assert.equal(hide.statusCode, 200, hide.body);
      // Every way in answers the 404 of a missing association, as reading it does: nothing tells the creator that
      // the hidden post still exists.
      for (const [method, payload] of [
        ['DELETE', undefined],
        ['PATCH', { target_type: 'post' }],
        ['POST', { _method: 'delete' }],
      ] as const) {
        const res = await t.inject({ method, url, token: stranger.token, ...(payload ? { payload } : {}) });
        assert.deepEqual(
          [res.statusCode, body(res).error.code],
          [404, 'object_not_found'],
          `${method} ${res.body}`,
        );
      }
      assert.equal((await t.inject({ method: 'GET', url, token: stranger.token })).statusCode, 404);
      const stored = await t.ctx.db
        .selectFrom('tag_associations')
        .select('uuid')
        .where('uuid', '=', body(react).data.uuid)
        .execute();
      assert.equal(stored.length, 1, 'the reaction is still stored');
      const del = await t.inject({ method: 'DELETE', url, token: admin.token });
      assert.equal(del.statusCode, 200, del.body);
    });

    it('serves the real DELETE and PATCH methods; admins may act on any association', async () => {
      const tag = body(await create(owner.token, { name: 'realmethods', tag_type: 'hashtag' })).data;
      const made = await t.inject({
        method: 'POST',
        url: '/tag-association',
        token: stranger.token,
        payload: { tag_uuid: tag.uuid, target_uuid: post, target_type: 'post' },
      });
      const url = `/tag-associations/${body(made).data.uuid}`;
      const foreignPatch = await t.inject({
        method: 'PATCH',
        url,
        token: owner.token,
        payload: { target_type: 'post' },
      });
      assert.equal(foreignPatch.statusCode, 404);
      const patch = await t.inject({
        method: 'PATCH',
        url,
        token: admin.token,
        payload: { target_uuid: stranger.uuid, target_type: 'user' },
      });
      assert.equal(patch.statusCode, 200, patch.body);
      assert.equal(body(patch).data.user_uuid, stranger.uuid, 'the creator stays');
      const foreignDelete = await t.inject({ method: 'DELETE', url, token: owner.token });
      assert.equal(foreignDelete.statusCode, 404);
      const del = await t.inject({ method: 'DELETE', url, token: admin.token });
      assert.equal(del.statusCode, 200, del.body);
      assert.equal((await associationsOf(t, stranger.uuid)).length, 0);
    });
  });

  describe(`one association write switched on [${dialect.name}]`, () => {
    let t: TestApp;
    let user: TestUser;
    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['tag-associations.update'] });
      user = await t.createUser();
    });
    after(async () => t?.close());

    it('answers the switched-off one with operation_disabled after the checks', async () => {
      const post = await createPost(t, user, '#solo');
      const [a] = await associationsOf(t, post);
      const url = `/tag-associations/${a?.uuid}`;
      const del = await t.inject({ method: 'POST', url, token: user.token, payload: { _method: 'delete' } });
      assert.equal(del.statusCode, 404);
      assert.equal(body(del).error.code, 'operation_disabled');
      assert.match(body(del).error.message, /tag-associations\.delete/);
      const realDelete = await t.inject({ method: 'DELETE', url, token: user.token });
      assert.equal(body(realDelete).error.code, 'operation_disabled');
      const upd = await t.inject({
        method: 'POST',
        url,
        token: user.token,
        headers: { 'x-http-method-override': 'PATCH' },
        payload: { target_uuid: user.uuid, target_type: 'user' },
      });
      assert.equal(upd.statusCode, 200, upd.body);
      const create = await t.inject({
        method: 'POST',
        url: '/tags/create',
        token: user.token,
        payload: { name: 'x', tag_type: 'hashtag' },
      });
      assert.equal(body(create).error.code, 'operation_disabled');
    });
  });
}
