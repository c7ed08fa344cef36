// docs/search.md, "The older walk below a block of messages (PostgreSQL)": below the recent window, a signed-in
// caller's walk goes on from their newest message, but it tells whether the older ids are dense with the words from
// the newest documents of the other kinds. A sample taken just below the caller's message, inside a block of others'
// messages, found no match there and read every match of the index through GIN. Sizes shrunk: 10 ranked candidates
// (2 for a common query), a recent window of 20 documents, a density sample of 10 ids, chunks of 5.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { search } from '../../src/modules/search/search.service.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { explainRecorded, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call, recordedSearch } from './world.ts';

const TUNING = {
  rankedCandidates: 10,
  recentDocs: 20,
  densitySample: 10,
  olderChunk: 5,
  spreadRanges: 0,
  statsRareMatches: 0,
  statsDenseShare: 0,
};

for (const dialect of testDialects()) {
  describe(`search: the older walk below a block of messages [${dialect.name}]`, () => {
    let t: TestApp;
    let caller: TestUser;
    let mine: string;
    const quasars: string[] = [];
    const standard = { ...searchTuning };

    /** Every match of `quasar` for a viewer, in result order. */
    const searchAll = async (viewer: string | null) => {
      const found: string[] = [];
      for (let offset = 0; ; offset += 7) {
        const page = await search(t.ctx, viewer, { query: 'quasar', limit: 7, offset });
        found.push(...page.data.map((item) => item.uuid));
        if (page.data.length < 7) return found;
      }
    };
    /**
     * Whether the ranked candidates of a viewer's first page were read through the main GIN index: a walk not forced
     * into id order (the pages after the candidates may be, where the planner finds it cheaper).
     */
    const rankedThroughGin = async (viewer: string | null) => {
      const { page, texts } = await recordedSearch(t, viewer, { query: 'quasar', limit: 10 });
      assert.equal(page.data.length, 10);
      return texts.some((s) => /where d\.tsv @@/.test(s));
    };

    /** PostgreSQL: the plan each walk of the other kinds in id order would run with, for a viewer's first page. */
    const otherKindsWalkPlans = async (viewer: string | null) => {
      const { nodes } = await recordedSearch(t, viewer, { query: 'quasar', limit: 10 });
      const plans = await explainRecorded(
        t.ctx.db,
        nodes,
        (s) =>
          /ts_match_vq\(d\.tsv/.test(s) && /order by d\.id desc/.test(s) && !/d\.kind = 'messages'/.test(s),
      );
      assert.ok(plans.length > 0);
      return plans;
    };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      const writer = await t.createUser('writer');
      caller = await t.createUser('caller');
      const [x, y] = [await t.createUser('sender-x'), await t.createUser('receiver-y')];
      const post = async (body: string) =>
        (await call(t, 'POST', '/posts', writer.token, { body, visibility: 'public' })).uuid as string;
      const message = (from: TestUser, to: TestUser, body: string) =>
        call(t, 'POST', '/messages', from.token, { recipient_uuid: to.uuid, body });
      // The older matches: 30 posts, every one with the word.
      for (let i = 0; i < 30; i++) quasars.unshift(await post(`quasar number ${i}`));
      // A block of others' messages, one of the caller's inside it, more than a density sample above the posts.
      for (let i = 0; i < 12; i++) await message(x, y, `hello ${i}`);
      mine = (await message(caller, y, 'a quasar of my own')).uuid as string;
      for (let i = 0; i < 3; i++) await message(x, y, `again ${i}`);
      // The recent window: 20 posts, one with the word (too few to make it common, so older posts are ranked too).
      for (let i = 0; i < 10; i++) await post(`filler ${i}`);
      quasars.unshift(await post('quasar in the window'));
      for (let i = 10; i < 19; i++) await post(`filler ${i}`);
      Object.assign(searchTuning, TUNING);
    });

    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('the caller finds every post a guest finds, and their own message in the block', async () => {
      const guest = await searchAll(null);
      assert.deepEqual(new Set(guest), new Set(quasars));
      assert.equal(guest.length, quasars.length);
      const found = await searchAll(caller.uuid);
      assert.equal(found.length, quasars.length + 1);
      assert.deepEqual(new Set(found), new Set([...quasars, mine]));
    });

    it('PostgreSQL: the caller walks the older posts in id order, as a guest does, not every match through GIN', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      assert.equal(await rankedThroughGin(null), false);
      assert.equal(await rankedThroughGin(caller.uuid), false);
    });

    it('PostgreSQL: a walk of the other kinds in id order steps over the messages through their own index', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      for (const viewer of [null, caller.uuid]) {
        for (const plan of await otherKindsWalkPlans(viewer)) {
          assert.match(plan, /using search_docs_not_messages on search_docs/, plan);
        }
      }
    });
  });
}
