import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call } from './world.ts';

// '#' searches find a hashtag only when the caller may see one of its uses (or it has none), typos included, and a
// found tag lists only the associations the caller may see.
for (const dialect of testDialects()) {
  describe(`hashtag search privacy [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    let carol: TestUser;
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const names = (items: any[]) =>
      items
        .filter((i) => i.type === 'tag')
        .map((i) => i.name)
        .sort();

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser('alice');
      bob = await t.createUser('bob');
      carol = await t.createUser('carol');
      await befriend(t, alice, bob);
      const post = (u: TestUser, text: string, visibility: string) =>
        call(t, 'POST', '/posts', u.token, { body: text, visibility });
      await post(alice, 'only me #secretmango', 'private');
      await post(alice, 'for friends #friendlykiwi', 'friends');
      await post(alice, 'private use #mixedfigs', 'private');
      await post(carol, 'public use #mixedfigs', 'public');
    });
    after(async () => t?.close());

    const tokens = () => ({ guest: t.guest, stranger: carol.token, friend: bob.token, owner: alice.token });

    it('/search, /search/types, /search/hashtags and /search/complete hide a private-only hashtag', async () => {
      for (const [who, token] of Object.entries(tokens())) {
        const expected = who === 'owner' ? ['secretmango'] : [];
        const urls = [
          '/search?query=%23secretmango',
          '/search/hashtags?query=secretmango',
          '/search/hashtags?query=%23secretmngo', // a typo
          '/search/complete?query=%23secretm',
          '/search/complete?query=secretm',
        ];
        for (const url of urls)
          assert.deepEqual(names(await call(t, 'GET', url, token)), expected, `${who} ${url}`);
        const typed = await call(t, 'GET', '/search/types?query=%23secretmang', token);
        assert.deepEqual(Object.keys(typed), ['tag']);
        assert.deepEqual(names(typed.tag), expected, `${who} /search/types`);
      }
    });

    it('a friends-only hashtag is found by the owner and friends, not by a guest or a stranger', async () => {
      for (const [who, token] of Object.entries(tokens())) {
        const expected = who === 'owner' || who === 'friend' ? ['friendlykiwi'] : [];
        for (const url of ['/search?query=%23friendly', '/search/hashtags?query=friendlykiwii']) {
          assert.deepEqual(names(await call(t, 'GET', url, token)), expected, `${who} ${url}`);
        }
      }
    });

    it('a hashtag used publicly and privately is found by all, listing only the associations each may see', async () => {
      const visible = { guest: 1, stranger: 1, friend: 1, owner: 2 };
      for (const [who, token] of Object.entries(tokens())) {
        for (const url of ['/search?query=%23mixedfig', '/search/hashtags?query=mixedfigs']) {
          const found = await call(t, 'GET', url, token);
          assert.deepEqual(names(found), ['mixedfigs'], `${who} ${url}`);
          assert.equal(found[0].associations.length, visible[who as keyof typeof visible], `${who} ${url}`);
          assert.equal(found[0].associations_count, 2);
        }
      }
      // The same as GET /tags answers the stranger.
      const listed = await call(
        t,
        'GET',
        `/tags?uuids=${(await call(t, 'GET', '/search?query=%23mixedfigs', carol.token))[0].uuid}`,
        carol.token,
      );
      const searched = await call(t, 'GET', '/search?query=%23mixedfigs', carol.token);
      assert.deepEqual(searched[0].associations, listed[0].associations);
    });

    it('bad input is a 400 and a guest without token is a 401', async () => {
      const bad = await t.inject({
        method: 'GET',
        url: '/search/hashtags?query=%23x&order=bogus',
        token: t.guest,
      });
      assert.equal(bad.statusCode, 400);
      assert.equal(body(bad).error.code, 'invalid_request');
      const none = await t.inject({ method: 'GET', url: '/search/hashtags?query=%23secretmango' });
      assert.equal(none.statusCode, 401);
    });
  });
  describe(`typo candidates of a hashtag search [${dialect.name}]`, () => {
    let t: TestApp;
    let carol: TestUser;
    let dave: TestUser;
    const found = async (token: string) =>
      (await call(t, 'GET', '/search/hashtags?query=zqxvictimword', token)).map(
        (i: { name: string }) => i.name,
      );

    before(async () => {
      t = await startTestApp(dialect);
      carol = await t.createUser('carol');
      dave = await t.createUser('dave');
      // A sentinel one edit from the query (8 of its trigrams), then 999 decoys that share 9 of its trigrams but are
      // too far to be typos: the sentinel is the last of the 1,000 candidates the search looks at.
      await call(t, 'POST', '/posts', carol.token, { body: 'sentinel #zqxvictimwxrd' });
      const decoys = Array.from({ length: 999 }, (_, i) => `#zqxvicti_mword_${String(i).padStart(3, '0')}`);
      for (let i = 0; i < decoys.length; i += 50) {
        await call(t, 'POST', '/posts', carol.token, { body: `decoys ${decoys.slice(i, i + 50).join(' ')}` });
      }
    });
    after(async () => t?.close());

    it('a hashtag only in a private post takes no candidate place from the tags a stranger may see', async () => {
      assert.deepEqual(await found(carol.token), ['zqxvictimwxrd']);
      // The exact name, used by a stranger in a private post: it would rank first among the candidates.
      await call(t, 'POST', '/posts', dave.token, {
        body: 'my secret #zqxvictimword',
        visibility: 'private',
      });
      for (const token of [carol.token, t.guest]) assert.deepEqual(await found(token), ['zqxvictimwxrd']);
      assert.deepEqual(await found(dave.token), ['zqxvictimword']);
    });
  });
}
