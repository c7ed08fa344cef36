import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call } from './world.ts';

// docs/search.md, "Uncached common words on PostgreSQL": the commonness of a query for a guest leaves out messages,
// and the walk below the recent window goes chunk by chunk on PostgreSQL without changing any page. Sizes shrunk:
// 10 ranked candidates (2 for a common query), "common" meaning 2 matches or more among the newest 20 documents, a
// recent window of 20 documents.
const TUNING = { rankedCandidates: 10, recentDocs: 20 };
/**
 * The walk below the recent window: one chunk for every older id; chunks of 5, 10, 20... (or 1, 2, 4...) ids walked in id order
 * while one of the newest 100 ids left matches; one query for everything left once the newest 10 do not.
 */
const CHUNKINGS = [
  { olderChunk: 1_000_000, densitySample: 2000 },
  { olderChunk: 5, densitySample: 100 },
  { olderChunk: 1, densitySample: 100 },
  { olderChunk: 5, densitySample: 10 },
];

/** A long body around one word, so the word is rare inside it. */
const long = (word: string) =>
  `${word} alpha beta gamma delta epsilon eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau`;

for (const dialect of testDialects()) {
  describe(`search: common words without the cache [${dialect.name}]`, () => {
    let t: TestApp;
    let strong: string;
    let reader: TestUser;
    let sender: TestUser;
    let relayer: TestUser;
    const nebulae: string[] = [];
    const standard = { ...searchTuning };
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const uuids = (items: any[]) => items.map((i) => i.uuid as string);
    /** Every match of a query in result order, pages of `limit`. */
    const search = async (query: string, token: string, limit = 7) => {
      const all: string[] = [];
      for (let offset = 0; ; offset += limit) {
        const url = `/search?query=${query}&limit=${limit}&offset=${offset}`;
        const page = uuids(await call(t, 'GET', url, token));
        all.push(...page);
        if (page.length < limit) return all;
      }
    };

    before(async () => {
      // No answer cache: the same query is asked again under other tunings.
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      const writer = await t.createUser('writer');
      const [a, b] = [await t.createUser('sender'), await t.createUser('receiver')];
      sender = a;
      reader = await t.createUser('reader');
      const post = async (body: string) =>
        (await call(t, 'POST', '/posts', writer.token, { body, visibility: 'public' })).uuid as string;
      strong = await post('orbit orbit orbit');
      // Comments: 6 with a word rare among them, each after 3 posts, then 25 without it (the recent window of the
      // comment column). Below that window the column walks a sparse word of one kind (GIN first on PostgreSQL).
      const thread = await post('a thread');
      for (let i = 0; i < 6; i++) {
        for (let j = 0; j < 3; j++) await post(`between ${i} ${j}`);
        nebulae.push(
          (await call(t, 'POST', `/posts/${thread}/comments`, writer.token, { body: `nebula ${i}` })).uuid,
        );
      }
      for (let i = 0; i < 25; i++)
        await call(t, 'POST', `/posts/${thread}/comments`, writer.token, { body: `later ${i}` });
      // Comets: 40 older matches, then 30 documents without the word (the newest 20 of them are the recent window).
      // Between them, a block of 12 messages between two others, with the word: only their two sides see them, and a
      // walk for anyone else skips their ids.
      const [relayA, relayB] = [await t.createUser('relay-a'), await t.createUser('relay-b')];
      relayer = relayA;
      for (let i = 0; i < 40; i++) await post(`comet number ${i}${i % 7 === 0 ? ' comet comet' : ''}`);
      for (let j = 0; j < 12; j++) {
        await call(t, 'POST', '/messages', relayA.token, {
          recipient_uuid: relayB.uuid,
          body: `comet relay ${j}`,
        });
      }
      for (let i = 0; i < 30; i++) await post(`filler ${i}`);
      for (const gap of [0, 1]) {
        await post(long('orbit'));
        for (let i = 0; i < 25; i++) await post(`spacer ${gap} ${i}`);
      }
      await post(long('orbit'));
      // The newest documents: messages with the word, which a guest never sees.
      for (let i = 0; i < 25; i++) {
        await call(t, 'POST', '/messages', a.token, {
          recipient_uuid: (b as TestUser).uuid,
          body: `orbit note ${i}`,
        });
      }
      Object.assign(searchTuning, TUNING);
    });

    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('a guest: messages the guest cannot see do not make a word common, so older posts are ranked too', async () => {
      // Counting the 25 newest messages made "orbit" common (2 of the newest 20 documents), and only its 2 newest
      // posts were ranked: the best post, older, came after them.
      const found = await search('orbit', t.guest);
      assert.equal(found.length, 4);
      assert.equal(found[0], strong);
    });

    it('a signed-in reader: messages of others do not make a word common either', async () => {
      // The reader sees none of the 25 newest messages; counting them made "orbit" common for every signed-in caller.
      const found = await search('orbit', reader.token);
      assert.equal(found.length, 4);
      assert.equal(found[0], strong);
      // The sender still finds every message of theirs, newer than every post, besides the posts.
      assert.equal((await search('orbit', sender.token)).length, 29);
    });

    it('a word rare in one kind gives the same column however the older ids are walked', async () => {
      for (const token of [t.guest, reader.token]) {
        const full: string[][] = [];
        for (const chunking of CHUNKINGS) {
          Object.assign(searchTuning, chunking);
          for (const limit of [2, 6, 10]) {
            const url = `/search/types?query=nebula&limit=${limit}`;
            const column = uuids((await call(t, 'GET', url, token)).comment);
            assert.equal(column.length, Math.min(limit, nebulae.length), url);
            assert.ok(
              column.every((uuid) => nebulae.includes(uuid)),
              url,
            );
            if (limit >= nebulae.length) full.push(column);
          }
        }
        Object.assign(searchTuning, TUNING, {
          olderChunk: standard.olderChunk,
          densitySample: standard.densitySample,
        });
        // Every tuning and limit finds all of them, in the same order.
        assert.deepEqual(new Set(full[0]), new Set(nebulae));
        for (const column of full) assert.deepEqual(column, full[0]);
      }
    });

    it('ranges sampled across the index to tell a common word give the same pages as none', async () => {
      // PostgreSQL asks how common the words are over ranges spread below the newest documents when those hold none
      // (docs/search.md, "Common words under a block of new posts"); a dense sample walks the ids in order instead of
      // the GIN plans. Either way the pages are the same, for each reader and each chunking of the older walk.
      for (const [token, query] of [
        [t.guest, 'comet'],
        [reader.token, 'comet'],
        [relayer.token, 'comet'],
        [t.guest, 'orbit'],
        [reader.token, 'nebula'],
      ] as const) {
        const pages: string[][] = [];
        for (const spread of [
          { spreadRanges: 0, spreadRangeIds: 250 },
          { spreadRanges: 4, spreadRangeIds: 5 },
          { spreadRanges: 2, spreadRangeIds: 20 },
        ]) {
          for (const chunking of CHUNKINGS.slice(0, 2)) {
            Object.assign(searchTuning, { ...chunking, ...spread, recentDocs: 83 });
            for (const limit of [3, 10]) pages.push(await search(query, token, limit));
          }
        }
        Object.assign(searchTuning, TUNING, {
          olderChunk: standard.olderChunk,
          densitySample: standard.densitySample,
          spreadRanges: standard.spreadRanges,
          spreadRangeIds: standard.spreadRangeIds,
        });
        const [whole] = pages;
        assert.ok((whole?.length ?? 0) > 0, `${query}: found`);
        for (const other of pages) assert.deepEqual(other, whole, `${query}`);
      }
      // A column of one kind with a GIN index of its own, where a dense sample takes the walk instead of that index.
      for (const token of [t.guest, reader.token]) {
        const columns: string[][] = [];
        for (const spread of [
          { spreadRanges: 0, spreadRangeIds: 250 },
          { spreadRanges: 4, spreadRangeIds: 5 },
        ]) {
          Object.assign(searchTuning, { ...spread, recentDocs: 83 });
          columns.push(uuids((await call(t, 'GET', '/search/types?query=nebula&limit=10', token)).comment));
        }
        Object.assign(searchTuning, TUNING, {
          spreadRanges: standard.spreadRanges,
          spreadRangeIds: standard.spreadRangeIds,
        });
        assert.deepEqual(new Set(columns[0]), new Set(nebulae));
        assert.deepEqual(columns[1], columns[0]);
      }
    });

    it('the walk below the recent window in chunks gives the same pages as one walk', async () => {
      // Recent windows that end just above the block of messages over the newest comet, so that chunk boundaries
      // fall between comets: the 83 posts after them, for a guest and for a signed-in reader alike (the window of
      // either leaves out the messages of others, newer than every post). The walk below starts in the block, which
      // it skips for them; the sender of those messages finds them besides the 40 posts, however the walk is cut.
      for (const [token, recentDocs, total] of [
        [t.guest, 83, 40],
        [reader.token, 83, 40],
        [relayer.token, 83, 52],
      ] as const) {
        const pages: string[][] = [];
        for (const chunking of CHUNKINGS) {
          Object.assign(searchTuning, { ...chunking, recentDocs });
          for (const limit of [3, 7, 10]) pages.push(await search('comet', token, limit));
        }
        Object.assign(searchTuning, TUNING, {
          olderChunk: standard.olderChunk,
          densitySample: standard.densitySample,
        });
        const [whole] = pages;
        assert.equal(whole?.length, total);
        for (const other of pages) assert.deepEqual(other, whole);
      }
    });
  });
}
