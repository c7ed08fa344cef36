import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { buildWorld, call, getFresh, type World } from './world.ts';

for (const dialect of testDialects()) {
  describe(`search privacy and operations [${dialect.name}]`, () => {
    let t: TestApp;
    let w: World;
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const uuids = (items: any[]) => new Set(items.map((i) => i.uuid));
    const label = (set: Set<string>) =>
      Object.entries(w.ids)
        .filter(([, u]) => set.has(u))
        .map(([l]) => l)
        .sort();

    before(async () => {
      t = await startTestApp(dialect);
      w = await buildWorld(t);
    });
    after(async () => t?.close());

    const publicZebra = ['carolPost', 'germanPost', 'network', 'publicComment', 'publicMedia', 'publicPost'];
    const friendZebra = [...publicZebra, 'friendsComment', 'friendsMedia', 'friendsPost', 'message'].sort();
    const ownerZebra = [...friendZebra, 'privatePost'].sort();

    it('GET /search shows a guest, a stranger, a friend and the owner exactly what visibility allows', async () => {
      const cases: [string, string, string[]][] = [
        ['guest', t.guest, publicZebra],
        ['stranger', w.carol.token, publicZebra],
        ['friend', w.bob.token, friendZebra],
        ['owner', w.alice.token, ownerZebra],
      ];
      for (const [who, token, expected] of cases) {
        const res = await t.inject({ method: 'GET', url: '/search?query=zebra&limit=100', token });
        assert.equal(res.statusCode, 200, res.body);
        const b = body(res);
        assert.deepEqual(b.count, { offset: 0, limit: 100, total: null });
        assert.deepEqual(label(uuids(b.data)), expected, who);
        for (const item of b.data) assert.ok(typeof item.type === 'string');
        assert.ok(b.data.every((i: { email?: string }) => i.email === undefined));
      }
    });

    it('GET /search/types carries every kind key, each limited by visibility', async () => {
      const guest = body(await t.inject({ method: 'GET', url: '/search/types?query=zebra', token: t.guest }));
      assert.deepEqual(Object.keys(guest.data).sort(), [
        'comment',
        'media',
        'messages',
        'network',
        'post',
        'user',
      ]);
      assert.equal(guest.data.messages.length, 0);
      assert.equal(guest.data.user.length, 0);
      assert.deepEqual(label(uuids(guest.data.post)), ['carolPost', 'germanPost', 'publicPost']);
      assert.ok(guest.data.post.every((p: { type: string }) => p.type === 'post'));
      const friend = body(
        await t.inject({ method: 'GET', url: '/search/types?query=zebra', token: w.bob.token }),
      );
      assert.deepEqual(label(uuids(friend.data.messages)), ['message']);
      assert.deepEqual(label(uuids(friend.data.comment)), ['friendsComment', 'publicComment']);
      assert.deepEqual(label(uuids(friend.data.media)), ['friendsMedia', 'publicMedia']);
      const owner = body(
        await t.inject({ method: 'GET', url: '/search/types?query=zebra&limit=1', token: w.alice.token }),
      );
      for (const list of Object.values(owner.data) as unknown[][]) assert.ok(list.length <= 1);
      // The owner has a match of each of these kinds, so limit=1 must leave exactly one, not none.
      for (const kind of ['post', 'comment', 'media', 'messages', 'network'])
        assert.equal(owner.data[kind].length, 1, kind);
      const stranger = body(
        await t.inject({ method: 'GET', url: '/search/types?query=secret', token: w.carol.token }),
      );
      assert.equal(stranger.data.messages.length, 0);
    });

    it('a message is found by its sender and recipient only', async () => {
      for (const [token, n] of [
        [w.alice.token, 1],
        [w.bob.token, 1],
        [w.carol.token, 0],
        [t.guest, 0],
      ] as const) {
        const data = await call(t, 'GET', '/search?query=secret%20message', token);
        assert.equal(data.length, n);
      }
    });

    it('a post turned private takes its comments out of friends’ results', async () => {
      await call(t, 'POST', `/posts/${w.ids.friendsPost}/update`, w.alice.token, { visibility: 'private' });
      const bob = await call(t, 'GET', '/search?query=zebra&limit=100', w.bob.token);
      assert.ok(!uuids(bob).has(w.ids.friendsComment));
      assert.ok(!uuids(bob).has(w.ids.friendsPost));
      const alice = await call(t, 'GET', '/search?query=zebra&limit=100', w.alice.token);
      assert.ok(uuids(alice).has(w.ids.friendsComment));
      await call(t, 'POST', `/posts/${w.ids.friendsPost}/update`, w.alice.token, { visibility: 'friends' });
      const again = await call(t, 'GET', '/search?query=zebra&limit=100', w.bob.token);
      assert.ok(uuids(again).has(w.ids.friendsComment));
    });

    it('a deleted post leaves the index', async () => {
      const p = await call(t, 'POST', '/posts', w.carol.token, { body: 'ephemeral quokka' });
      assert.equal((await call(t, 'GET', '/search?query=quokka', t.guest)).length, 1);
      await call(t, 'POST', `/posts/${p.uuid}/delete`, w.carol.token);
      assert.equal((await call(t, 'GET', '/search?query=quokka', t.guest)).length, 0);
    });

    it('GET /search/users leaves out exclude_user_uuids given as an array or a comma list', async () => {
      const all = await call(t, 'GET', '/search/users?query=jo', t.guest);
      assert.ok(uuids(all).has(w.john.uuid));
      const johanna = all.find((u: { username: string }) => u.username === 'johanna');
      assert.ok(johanna);
      const arr = await call(t, 'GET', `/search/users?query=jo&exclude_user_uuids[]=${w.john.uuid}`, t.guest);
      assert.ok(!uuids(arr).has(w.john.uuid));
      assert.ok(uuids(arr).has(johanna.uuid));
      const two = await call(
        t,
        'GET',
        `/search/users?query=jo&exclude_user_uuids[]=${w.john.uuid}&exclude_user_uuids[]=${johanna.uuid}`,
        t.guest,
      );
      assert.equal(two.length, 0);
      const comma = await call(
        t,
        'GET',
        `/search/users?query=jo&exclude_user_uuids=${w.john.uuid},${johanna.uuid}`,
        t.guest,
      );
      assert.equal(comma.length, 0);
      const bad = await t.inject({
        method: 'GET',
        url: '/search/users?query=jo&exclude_user_uuids=nope',
        token: t.guest,
      });
      assert.equal(bad.statusCode, 400);
      assert.equal(body(bad).error.details[0].field, 'exclude_user_uuids');
      const many = Array.from(
        { length: 101 },
        (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      );
      const tooMany = await t.inject({
        method: 'GET',
        url: `/search/users?query=jo&exclude_user_uuids=${many.join(',')}`,
        token: t.guest,
      });
      assert.equal(tooMany.statusCode, 400);
      const user = all.find((u: { uuid: string }) => u.uuid === w.john.uuid);
      assert.deepEqual(Object.keys(user).sort(), [
        'bio',
        'created_at',
        'display_name',
        'karma',
        'language',
        'network_uuid',
        'type',
        'updated_at',
        'username',
        'uuid',
      ]);
    });

    it('GET /search/friends finds only confirmed friends, needs a logged-in user, honours exclusions', async () => {
      const aliceFriends = await call(t, 'GET', '/search/friends?query=bob', w.alice.token);
      assert.deepEqual([...uuids(aliceFriends)], [w.bob.uuid]);
      // Two-way: the side that confirmed finds the side that asked.
      const bobFriends = await call(t, 'GET', '/search/friends?query=alice', w.bob.token);
      assert.deepEqual([...uuids(bobFriends)], [w.alice.uuid]);
      const carolSees = await call(t, 'GET', '/search/friends?query=bob', w.carol.token);
      assert.equal(carolSees.length, 0);
      const excluded = await call(
        t,
        'GET',
        `/search/friends?query=bob&exclude_user_uuids[]=${w.bob.uuid}`,
        w.alice.token,
      );
      assert.equal(excluded.length, 0);
      const guest = await t.inject({ method: 'GET', url: '/search/friends?query=bob', token: t.guest });
      assert.equal(guest.statusCode, 403);
      assert.equal(body(guest).error.code, 'login_required');
      const none = await t.inject({ method: 'GET', url: '/search/friends?query=bob' });
      assert.equal(none.statusCode, 401);
    });

    it('a # query searches hashtags in the tag store on /search and /search/types', async () => {
      const mixed = await call(t, 'GET', '/search?query=%23java', t.guest);
      assert.equal(mixed.length, 1);
      assert.equal(mixed[0].type, 'tag');
      assert.equal(mixed[0].name, 'javascript');
      assert.equal(mixed[0].tag_type, 'hashtag');
      assert.ok(Array.isArray(mixed[0].associations));
      assert.equal(mixed[0].associations_count, mixed[0].associations.length);
      const typed = body(
        await t.inject({ method: 'GET', url: '/search/types?query=%23java', token: t.guest }),
      );
      assert.deepEqual(Object.keys(typed.data), ['tag']);
      assert.equal(typed.data.tag[0].name, 'javascript');
      const typo = await call(t, 'GET', '/search/hashtags?query=%23javscript', t.guest);
      assert.equal(typo[0]?.name, 'javascript');
      const plain = await call(t, 'GET', '/search/hashtags?query=JAVA', t.guest);
      assert.equal(plain[0]?.name, 'javascript');
    });

    it('GET /search/networks finds networks by name and description', async () => {
      const byName = await call(t, 'GET', '/search/networks?query=zebra%20run', t.guest);
      assert.deepEqual([...uuids(byName)], [w.ids.network]);
      assert.deepEqual(Object.keys(byName[0]).sort(), [
        'created_at',
        'description',
        'name',
        'payment_id',
        'type',
        'updated_at',
        'user_uuid',
        'uuid',
      ]);
      const byDescription = await call(t, 'GET', '/search/networks?query=morning', t.guest);
      assert.equal(byDescription.length, 1);
      const typo = await call(t, 'GET', '/search/networks?query=zebar', t.guest);
      assert.deepEqual([...uuids(typo)], [w.ids.network]);
    });

    it('GET /search/mentions lists the caller’s friends first and needs a login', async () => {
      const dave = await t.createUser('bobby_tables');
      const friends = await call(t, 'GET', '/search/mentions?query=%40bo', w.alice.token);
      assert.deepEqual(
        friends.map((u: { username: string }) => u.username),
        ['bob', 'bobby_tables'],
      );
      await call(t, 'POST', '/connections', w.carol.token, { user_uuid: dave.uuid }).then((c) =>
        call(t, 'POST', `/connections/${c.uuid}/confirm`, dave.token),
      );
      const carolView = await call(t, 'GET', '/search/mentions?query=bo', w.carol.token);
      assert.deepEqual(
        carolView.map((u: { username: string }) => u.username),
        ['bobby_tables', 'bob'],
      );
      const guest = await t.inject({ method: 'GET', url: '/search/mentions?query=bo', token: t.guest });
      assert.equal(guest.statusCode, 403);
    });

    it('GET /search/complete detects # and @, mixes users, networks and hashtags otherwise, at most 10', async () => {
      const tags = await call(t, 'GET', '/search/complete?query=%23jav', t.guest);
      assert.deepEqual(
        tags.map((x: { type: string; name: string }) => [x.type, x.name]),
        [['tag', 'javascript']],
      );
      const users = await call(t, 'GET', '/search/complete?query=%40jo', t.guest);
      assert.deepEqual(users.map((u: { username: string }) => u.username).sort(), ['johanna', 'john_smith']);
      const mixed = await call(t, 'GET', '/search/complete?query=j', w.alice.token);
      const types = new Set(mixed.map((x: { type: string }) => x.type));
      assert.ok(types.has('user') && types.has('tag'), JSON.stringify(mixed));
      const zebra = await call(t, 'GET', '/search/complete?query=zeb', t.guest);
      assert.deepEqual(
        zebra.map((x: { type: string }) => x.type),
        ['network'],
      );
      for (let i = 0; i < 12; i++) await t.createUser(`complete_${i}`);
      const capped = await call(t, 'GET', '/search/complete?query=complete', t.guest);
      assert.equal(capped.length, 10);
      const over = await t.inject({
        method: 'GET',
        url: '/search/complete?query=c&limit=11',
        token: t.guest,
      });
      assert.equal(over.statusCode, 400);
    });

    it('username and hashtag prefixes match literally, the same on every run', async () => {
      // Many uncached runs with changing prefixes: on PostgreSQL the lookups are prepared statements, and a
      // connection that ran one five times may keep its generic plan (test/search/prefix-plans.test.ts).
      const name = 'john_smith';
      for (let round = 0; round < 8; round++) {
        for (let n = 1; n <= name.length; n++) {
          const prefix = name.slice(0, n);
          const users = await getFresh(
            t,
            `/search/complete?query=${encodeURIComponent(`@${prefix}`)}`,
            t.guest,
          );
          // The exact matches by username come first; typo-tolerant ones may follow when they are few.
          const exact = ['johanna', name].filter((u) => u.startsWith(prefix));
          assert.deepEqual(
            users.slice(0, exact.length).map((u: { username: string }) => u.username),
            exact,
            `@${prefix}`,
          );
        }
        for (const query of ['#j', '#javascrip', '#javascript']) {
          const tags = await getFresh(t, `/search/complete?query=${encodeURIComponent(query)}`, t.guest);
          assert.deepEqual(
            tags.map((x: { name: string }) => x.name),
            ['javascript'],
            query,
          );
        }
      }
      // `_` (a key character; `%` ends the key's word) is no wildcard. Hashtag completion adds no typo-tolerant
      // matches, so an empty answer is the exact one.
      for (const query of ['#ja_a', '#_', '#javascript_', '#j_v']) {
        const res = await t.inject({
          method: 'GET',
          url: `/search/complete?query=${encodeURIComponent(query)}`,
          token: t.guest,
        });
        assert.ok([200, 400].includes(res.statusCode), `${query}: ${res.statusCode} ${res.body}`);
        if (res.statusCode === 200) assert.deepEqual(body(res).data, [], query);
      }
    });

    it('paging through a query yields every match once, in the ranked part and past it', async () => {
      for (let i = 0; i < 23; i++) {
        await call(t, 'POST', '/posts', w.carol.token, {
          body: `pagingword item ${i}${i % 3 === 0 ? ' pagingword pagingword' : ''}`,
        });
      }
      const ranking = await import('../../src/modules/search/search-ranking.service.ts');
      const standard = ranking.searchTuning.rankedCandidates;
      for (const ranked of [standard, 5]) {
        ranking.searchTuning.rankedCandidates = ranked;
        try {
          for (const order of ['relevance', 'created_at:asc', 'updated_at desc']) {
            const seen: string[] = [];
            for (let page = 1; page <= 6; page++) {
              const data = await call(
                t,
                'GET',
                `/search?query=pagingword&limit=4&page=${page}&order=${encodeURIComponent(order)}`,
                t.guest,
              );
              seen.push(...data.map((d: { uuid: string }) => d.uuid));
            }
            assert.equal(seen.length, 23, `${ranked} ${order}`);
            assert.equal(new Set(seen).size, 23, `${ranked} ${order}`);
          }
        } finally {
          ranking.searchTuning.rankedCandidates = standard;
        }
      }
      const created = await call(
        t,
        'GET',
        '/search?query=pagingword&limit=100&order=created_at:asc',
        t.guest,
      );
      assert.equal(created.length, 23);
      const times = created.map((d: { created_at: string }) => d.created_at);
      assert.deepEqual(times, [...times].sort());
      const ranked = await call(t, 'GET', '/search?query=pagingword&limit=3', t.guest);
      assert.equal(ranked.length, 3);
      assert.ok(
        ranked.every((d: { body: string }) => d.body.split('pagingword').length === 4),
        'denser first',
      );
    });

    it('a pending connection is no friendship: no friends search hit, no friends-only content', async () => {
      const asker = await t.createUser('pending_asker');
      const asked = await call(t, 'POST', '/connections', asker.token, { user_uuid: w.alice.uuid });
      assert.equal(asked.status, 'pending');
      assert.deepEqual(await call(t, 'GET', '/search/friends?query=pending', w.alice.token), []);
      assert.deepEqual(await call(t, 'GET', '/search/friends?query=alice', asker.token), []);
      const seen = await getFresh(t, '/search?query=zebra&limit=100', asker.token);
      assert.deepEqual(label(uuids(seen)), publicZebra);
      const post = await t.inject({ method: 'GET', url: `/posts/${w.ids.friendsPost}`, token: asker.token });
      assert.equal(post.statusCode, 404, post.body);
    });

    it('the index can be rebuilt from the base tables with the same results', async () => {
      const before = await call(t, 'GET', '/search?query=zebra&limit=100', w.alice.token);
      const service = await import('../../src/modules/search/search.service.ts');
      const counts = await service.reindex(t.ctx);
      assert.ok(counts.docs > 10);
      const afterwards = await call(t, 'GET', '/search?query=zebra&limit=100', w.alice.token);
      assert.deepEqual(uuids(afterwards), uuids(before));
      const typo = await call(t, 'GET', '/search/users?query=jonh', t.guest);
      assert.ok(uuids(typo).has(w.john.uuid));
    });
  });
}
