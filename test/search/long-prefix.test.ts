import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call } from './world.ts';

// A last word longer than the FTS5 prefix indexes (5 characters) is matched through the index's own words on SQLite
// (docs/search.md, "Long prefixes"); these answers must be exactly those of a prefix match, on both engines.
for (const dialect of testDialects()) {
  describe(`search long last words [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    const ids: Record<string, string> = {};
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const uuids = (items: any[]) => new Set<string>(items.map((i) => i.uuid));
    const post = async (label: string, text: string, visibility = 'public') => {
      ids[label] = (await call(t, 'POST', '/posts', alice.token, { body: text, visibility })).uuid;
    };

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser('longprefix_alice');
      bob = await t.createUser('longprefix_bob');
      await befriend(t, alice, bob);
      await post('coffee', 'morning coffee on the balcony');
      await post('coffees', 'two coffees please');
      await post('coffeehouse', 'the old coffeehouse at dawn');
      await post('friendsCoffeehouse', 'a coffeehouse for friends only', 'friends');
      await post('tea', 'morning tea instead');
      const thread = (await call(t, 'POST', '/posts', bob.token, { body: 'a thread', visibility: 'public' }))
        .uuid;
      ids.comment = (
        await call(t, 'POST', `/posts/${thread}/comments`, bob.token, { body: 'plain words here' })
      ).uuid;
    });
    after(async () => t?.close());

    it('a long last word matches every word it starts, and only those', async () => {
      const coffee = uuids(await call(t, 'GET', '/search?query=coffee', t.guest));
      assert.deepEqual(coffee, new Set([ids.coffee, ids.coffees, ids.coffeehouse]));
      const house = uuids(await call(t, 'GET', '/search?query=coffeeh', t.guest));
      assert.deepEqual(house, new Set([ids.coffeehouse]));
      assert.equal((await call(t, 'GET', '/search?query=coffeehousez', t.guest)).length, 0);
      const twoWords = uuids(await call(t, 'GET', '/search?query=morning%20coffe', t.guest));
      assert.deepEqual(twoWords, new Set([ids.coffee]));
    });

    it('privacy is unchanged: a friend finds the friends-only post, a guest does not', async () => {
      const guest = uuids(await call(t, 'GET', '/search?query=coffeehou', t.guest));
      assert.ok(!guest.has(ids.friendsCoffeehouse as string));
      const friend = uuids(await call(t, 'GET', '/search?query=coffeehou', bob.token));
      assert.deepEqual(friend, new Set([ids.coffeehouse, ids.friendsCoffeehouse]));
      const types = await call(t, 'GET', '/search/types?query=coffeehou', t.guest);
      assert.deepEqual(uuids(types.post), new Set([ids.coffeehouse]));
    });

    it('the kind of a document is not one of its words', async () => {
      // Every comment is indexed with kind "comment"; only title and body are searched.
      const found = uuids(await call(t, 'GET', '/search?query=commen', t.guest));
      assert.ok(!found.has(ids.comment as string));
      assert.equal((await call(t, 'GET', '/search/types?query=comment', t.guest)).comment.length, 0);
    });

    it('a long prefix of more words than are expanded still finds them all', async () => {
      // 40 distinct words share the start "quokka", more than the expansion takes (32): the prefix query answers.
      for (let i = 0; i < 40; i++)
        await post(`q${i}`, `quokka${String.fromCharCode(97 + (i % 26))}${i} sighting`);
      const found = uuids(await call(t, 'GET', '/search?query=quokka&limit=100', t.guest));
      assert.equal(found.size, 40);
      const one = uuids(await call(t, 'GET', '/search?query=quokkab27', t.guest));
      assert.deepEqual(one, new Set([ids.q27]));
    });
  });
}
