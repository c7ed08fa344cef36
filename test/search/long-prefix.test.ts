import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { search } from '../../src/modules/search/search.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call } from './world.ts';

// A last word longer than 5 characters is matched through the index's own words (docs/search.md, "Long prefixes"):
// FTS5's vocabulary on SQLite, the table of lexemes of migration 0025 on PostgreSQL; these answers must be exactly
// those of a prefix match, on both engines.
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

    it('a word first written after the others, or by an edit, is among the words a long prefix stands for', async () => {
      await post('later', 'a coffeemaker arrived');
      const later = uuids(await call(t, 'GET', '/search?query=coffee', t.guest));
      assert.deepEqual(later, new Set([ids.coffee, ids.coffees, ids.coffeehouse, ids.later]));
      await call(t, 'POST', `/posts/${ids.tea}/update`, alice.token, { body: 'morning coffeepot instead' });
      const edited = uuids(await call(t, 'GET', '/search?query=coffeep', t.guest));
      assert.deepEqual(edited, new Set([ids.tea]));
    });

    it('PostgreSQL keeps every lexeme a document held, so a word no longer written still matches nothing', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const words = await sql<{
        word: string;
      }>`select word from search_words where word like 'coffee%' order by word`.execute(t.ctx.db);
      // The stemmed lexemes are there too (`coffeehous`): a superset, as every lexeme of a document is kept.
      const kept = new Set(words.rows.map((r) => r.word));
      for (const word of ['coffee', 'coffeehouse', 'coffeemaker', 'coffeepot', 'coffees'])
        assert.ok(kept.has(word), word);
      // The search names them instead of asking GIN for the prefix.
      const { db, nodes } = recordingQueries(t.ctx.db);
      await search({ ...t.ctx, readDb: db }, null, { query: 'coffeem' });
      const texts = nodes.flatMap((node) => db.getExecutor().compileQuery(node, createQueryId()).parameters);
      assert.ok(
        texts.some((p) => String(p).split(' | ').includes("'coffeemaker':A")),
        JSON.stringify(texts),
      );
      assert.ok(!texts.some((p) => String(p).includes(':*')), JSON.stringify(texts));
      await call(t, 'POST', `/posts/${ids.later}/delete`, alice.token);
      const after = uuids(await call(t, 'GET', '/search?query=coffeem', t.guest));
      assert.equal(after.size, 0);
    });

    it('PostgreSQL: two writers adding the same new words in two orders neither wait nor deadlock', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const write = (trx: typeof t.ctx.db, text: string) => {
        const now = nowIso();
        return trx
          .insertInto('posts')
          .values({
            uuid: uuidv7(),
            user_uuid: alice.uuid,
            body: text,
            visibility: 'public',
            language: 'en',
            created_at: now,
            updated_at: now,
          })
          .execute();
      };
      let firstWrote = () => {};
      let secondWrote = () => {};
      const first = new Promise<void>((resolve) => {
        firstWrote = resolve;
      });
      const second = new Promise<void>((resolve) => {
        secondWrote = resolve;
      });
      // Each holds one new word uncommitted when it writes the other's. A deadlock would be retried (RetryingKysely):
      // each transaction must run once.
      const runs = [0, 0];
      await Promise.all([
        t.ctx.db.transaction().execute(async (trx) => {
          runs[0] = (runs[0] ?? 0) + 1;
          await write(trx, 'a wombatone here');
          firstWrote();
          await second;
          await write(trx, 'a wombattwo there');
        }),
        t.ctx.db.transaction().execute(async (trx) => {
          runs[1] = (runs[1] ?? 0) + 1;
          await first;
          await write(trx, 'a wombattwo here');
          secondWrote();
          await write(trx, 'a wombatone there');
        }),
      ]);
      assert.deepEqual(runs, [1, 1]);
      const found = await call(t, 'GET', '/search?query=wombatt', t.guest);
      assert.equal(found.length, 2);
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
