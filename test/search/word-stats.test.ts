// The bound a PostgreSQL search takes from the statistics of the index's words (docs/search.md, "Rare words by the
// statistics"): a query is read at once through GIN only when the statistics put its matches under the bound, and
// its answer is the counted path's whatever they say.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { refreshRecentIndex } from '../../src/modules/search/search-index.repository.ts';
import {
  denseHeadPlan,
  newestCountOf,
  searchTuning,
} from '../../src/modules/search/search-ranking.service.ts';
import {
  matchesAtMost,
  prefixEntryShare,
  wordShare,
  wordStatsTiming,
} from '../../src/modules/search/search-word-stats.service.ts';
import { startTestApp, type TestApp, type TestDialect, type TestUser, testDialects } from '../helper.ts';
import { call, insertPosts, insertsCounted, recordedSearch } from './world.ts';

// 1,000 documents when analyzed: `love` in 30%, `coffee` in 5%; any lexeme not listed in at most 0.2% (2 documents).
const stats = {
  freqs: new Map([
    ['love', 0.3],
    ['coffee', 0.05],
  ]),
  minFreq: 0.002,
  rows: 1000,
};
const standard = { ...searchTuning };
const standardTiming = { ...wordStatsTiming };

/** Analyzes the index and applies `tuning`, the statistics usable at once (the analysis has committed). */
async function analyzeWith(t: TestApp, tuning: Partial<typeof searchTuning>): Promise<void> {
  await insertsCounted(t);
  await sql`analyze search_docs`.execute(t.ctx.db);
  Object.assign(searchTuning, tuning);
  // write-path-cost.test.ts checks the wait after an analysis, skipped here.
  wordStatsTiming.settleMs = 0;
}

/** Puts the tuning and the statistics' timing back. */
function restoreTuning(): void {
  Object.assign(searchTuning, standard);
  Object.assign(wordStatsTiming, standardTiming);
}

/**
 * A test app without the answer cache, with an author of posts and a reader who writes to a penpal: the worlds of the
 * dense words. `send` stores a message from the reader to the penpal.
 */
async function startReaderWorld(dialect: TestDialect) {
  const t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
  const author = await t.createUser('author');
  const reader = await t.createUser('reader');
  const pen = await t.createUser('penpal');
  const send = (body: string) =>
    call(t, 'POST', '/messages', reader.token, { recipient_uuid: pen.uuid, body });
  return { t, author, reader, send };
}

/** Whether a search counted the density of its newest range (the statement the statistics' shortcuts skip). */
const countedNewest = (texts: string[]) => texts.some((s) => /\bas newest\b/.test(s));

const near = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 1e-6, `${actual}`);

describe('matchesAtMost', () => {
  it('bounds a listed word by its share and any other by the smallest share listed', () => {
    near(matchesAtMost({ terms: ['love', 'ab'] }, stats), 300);
    near(matchesAtMost({ terms: ['zymurgy', 'ab'] }, stats), 2);
  });

  it('bounds several words by the fewest of any one of them', () => {
    near(matchesAtMost({ terms: ['love', 'coffee', 'ab'] }, stats), 50);
    near(matchesAtMost({ terms: ['love', 'zymurgy', 'ab'] }, stats), 2);
  });

  it('sums the words an expanded last word stands for', () => {
    near(matchesAtMost({ terms: ['coffee'], prefixWords: ['coffee', 'coffees', 'coffeehouse'] }, stats), 54);
  });

  it('cannot bound a prefix no list of words stands for, a stemmed query, nor a word the parser may split', () => {
    assert.equal(matchesAtMost({ terms: ['lov'] }, stats), Number.POSITIVE_INFINITY);
    assert.equal(matchesAtMost({ terms: ['coffee'], prefixWords: [] }, stats), Number.POSITIVE_INFINITY);
    assert.equal(matchesAtMost({ terms: ['zymurgy', 'ab'], stem: 'en' }, stats), Number.POSITIVE_INFINITY);
    // `1e5x` is a number and a word to PostgreSQL's parser; digits are never looked up.
    assert.equal(matchesAtMost({ terms: ['1e5x', 'ab'] }, stats), Number.POSITIVE_INFINITY);
    assert.equal(matchesAtMost({ terms: ['h𓱌a', 'ab'] }, stats), Number.POSITIVE_INFINITY);
    // The short prefix is left out; the whole word still bounds the query.
    near(matchesAtMost({ terms: ['coffee', 'lo'] }, stats), 50);
    near(matchesAtMost({ terms: ['καφές', 'ab'] }, stats), 2);
  });
});

describe('wordShare', () => {
  const listed = {
    freqs: new Map([
      ['love', 0.3],
      ['lovely', 0.05],
      ['loved', 0.1],
      ['lov', 0.01],
      ['low', 0.2],
      ['coffee', 0.05],
    ]),
    minFreq: 0.002,
    rows: 1000,
  };
  it('gives a whole word (one letter) its own share, and an unlisted one none', () => {
    const letters = {
      ...listed,
      freqs: new Map([
        ['a', 0.2],
        ['ab', 0.3],
      ]),
    };
    near(wordShare({ terms: ['a'] }, letters) ?? -1, 0.2);
    near(wordShare({ terms: ['q'] }, letters) ?? -1, 0);
  });

  it('sums the listed words a prefix starts, or those an expanded prefix stands for', () => {
    // `love` as a prefix: love, loved and lovely, not `lov` or `low`.
    near(wordShare({ terms: ['love'] }, listed) ?? -1, 0.45);
    near(wordShare({ terms: ['lov'] }, listed) ?? -1, 0.46);
    near(wordShare({ terms: ['love'], prefixWords: ['love', 'lovely', 'lovecraft'] }, listed) ?? -1, 0.35);
    near(wordShare({ terms: ['zzz'] }, listed) ?? -1, 0);
    near(
      wordShare(
        { terms: ['l'] },
        {
          ...listed,
          freqs: new Map([
            ['la', 0.7],
            ['le', 0.6],
          ]),
        },
      ) ?? -1,
      0,
    );
    near(
      wordShare(
        { terms: ['lov'] },
        {
          ...listed,
          freqs: new Map([
            ['lova', 0.7],
            ['love', 0.6],
          ]),
        },
      ) ?? -1,
      1,
    );
  });

  it('cannot tell for several words, a stemmed query, or a word the parser may split', () => {
    assert.equal(wordShare({ terms: ['love', 'coffee'] }, listed), null);
    assert.equal(wordShare({ terms: ['love'], stem: 'en' }, listed), null);
    assert.equal(wordShare({ terms: ['1e5x'] }, listed), null);
  });

  // The entries an index of words reads in full for a query: those of the words its last word starts as a prefix.
  it('gives the share of the last word as a prefix alone, a stemmed query too, and none without such a word', () => {
    near(prefixEntryShare({ terms: ['coffee', 'love'] }, listed), 0.45);
    near(prefixEntryShare({ terms: ['love', 'coffee'] }, listed), 0.05);
    near(prefixEntryShare({ terms: ['coffee', 'love'], stem: 'en' }, listed), 0.45);
    // A one-letter last word is whole, an expanded prefix reads its words whole, and the parser may split `1e5x`.
    near(prefixEntryShare({ terms: ['love', 'l'] }, listed), 0);
    near(prefixEntryShare({ terms: ['love'], prefixWords: ['love', 'lovely'] }, listed), 0);
    near(prefixEntryShare({ terms: ['love', '1e5x'] }, listed), 0);
    near(prefixEntryShare({ terms: ['zzz'] }, listed), 0);
  });
});

describe('denseHeadPlan', () => {
  // The seeded world: the newest 2,000 ids counted, a window of 30,000, an index of recent documents 50,000 ids deep.
  const seeded = {
    changedSince: 0,
    fewest: 200,
    most: 1000,
    spanIds: 2000,
    windowIds: 30_000,
    indexIds: 50_000,
  };
  it("reads a word expected to be common up to a common query's candidates, in id order", () => {
    assert.deepEqual(denseHeadPlan({ ...seeded, share: 0.5 }), { limit: 200, viaIndex: false });
    assert.deepEqual(denseHeadPlan({ ...seeded, share: 0.1 }), { limit: 200, viaIndex: false });
  });
  it("reads `lov` (1.7%) and `mus` (3.6%) up to the window's candidates through the index, `was` (8.3%) in id order", () => {
    assert.deepEqual(denseHeadPlan({ ...seeded, share: 0.0166 }), { limit: 1000, viaIndex: true });
    assert.deepEqual(denseHeadPlan({ ...seeded, share: 0.0364 }), { limit: 1000, viaIndex: true });
    assert.deepEqual(denseHeadPlan({ ...seeded, share: 0.083 }), { limit: 1000, viaIndex: false });
  });
  it('leaves it to the count when the index reads less by the share but not with the changed rows, or near common', () => {
    assert.equal(denseHeadPlan({ ...seeded, share: 0.0166, changedSince: 10_000 }), undefined);
    // Within twice of common (5%), where the index still reads less by the share (a small index).
    assert.equal(denseHeadPlan({ ...seeded, indexIds: 20_000, share: 0.06 }), undefined);
  });
  it('walks in id order without an index above the window', () => {
    assert.deepEqual(denseHeadPlan({ ...seeded, indexIds: null, share: 0.0166 }), {
      limit: 1000,
      viaIndex: false,
    });
  });
});

describe('newestCountOf', () => {
  const ref = (id: number, kind = 'posts') => ({ id, kind, uuid: `u${id}` }) as never;
  const range = { afterId: 100, toId: 120, cap: 3 };
  it('counts the matches of the range and kinds when the read holds all of them', () => {
    // Ended before `most`: every match is in the read.
    assert.equal(newestCountOf([ref(118), ref(110, 'messages'), ref(50)], range, ['posts'], 10), 1);
    // Full, but its oldest match is below the range.
    assert.equal(newestCountOf([ref(119), ref(118), ref(99)], range, ['posts'], 3), 2);
  });

  it('stops at the cap, and cannot tell when the read stopped inside the range short of it', () => {
    assert.equal(newestCountOf([ref(119), ref(118), ref(117), ref(116)], range, ['posts'], 4), 3);
    assert.equal(
      newestCountOf([ref(121, 'messages'), ref(119), ref(118, 'messages')], range, ['posts'], 3),
      null,
    );
  });
});

for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`search: the same answers with and without the statistics [${dialect.name}]`, () => {
    let t: TestApp;

    before(async () => {
      t = await startTestApp(dialect);
      const author = await t.createUser();
      const add = (bodies: string[]) => insertPosts(t, author.uuid, bodies);
      // An old post dense with `trendword` and one with `oldword`, then 50 others, then 5 newer `trendword` posts:
      // the newest range holds more than a common query's candidates of it.
      await add(['trendword trendword trendword trendword', 'an oldword post', 'oldword oldword oldword']);
      await add(Array.from({ length: 50 }, (_, i) => `other stuff ${i}`));
      await add(Array.from({ length: 5 }, (_, i) => `trendword in a long post with many other words ${i}`));
      // 10 ranked candidates (2 for a common query: the newest 20 ids counted), a recent window of 1,000, no spread
      // ranges; the statistics call a word of at most 20 documents rare, whatever changed since, and none dense.
      await analyzeWith(t, { rankedCandidates: 10, recentDocs: 1000, spreadRanges: 0, statsDenseShare: 0 });
    });
    after(async () => {
      restoreTuning();
      await t?.close();
    });

    /** The uuids found, and whether the density count ran, with the statistics bounded at `statsRareMatches`. */
    const searchWith = async (query: string, statsRareMatches: number) => {
      Object.assign(searchTuning, { statsRareMatches, statsChangedRows: 1_000_000 });
      const { page, texts } = await recordedSearch(t, null, { query, limit: 20 });
      return { uuids: page.data.map((item) => item.uuid), counted: countedNewest(texts) };
    };

    for (const query of ['trendword', 'oldword']) {
      it(`\`${query}\`: read without the count, the answer is the counted one`, async () => {
        const counted = await searchWith(query, 0);
        assert.equal(counted.counted, true);
        const read = await searchWith(query, 20);
        assert.equal(read.counted, false, 'the statistics call it rare');
        assert.deepEqual(read.uuids, counted.uuids);
        assert.ok(counted.uuids.length > 1);
      });
    }
  });
}

for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`search: dense words read before the count [${dialect.name}]`, () => {
    let t: TestApp;
    let reader: TestUser;

    before(async () => {
      const world = await startReaderWorld(dialect);
      ({ t, reader } = world);
      const { author, send } = world;
      const add = (bodies: string[]) => insertPosts(t, author.uuid, bodies);
      // About 205 documents. The first match of each word holds it three times: the most relevant, and the oldest, so
      // a page shows whether it was among the ranked candidates (the newest 10, or 2 for a common query). A word in
      // 10% of them or more is read up to 2 (denseHeadPlan), any other up to 10.
      // - `fadedword`: 30 old posts (15% of the documents), none among the newest: read up to 2, then walked on;
      // - `ownword`: 24 old posts and the reader's 6 newest messages (15%): the reader's read is their messages, then
      //   walked on below them;
      // - `midword`: 12 posts (6%, under common): read up to 10 at once, the 2 oldest then older than the candidates;
      // - `commonword`: every other of the newest 30 posts and the reader's 10 messages (12%): common among the newest;
      // - `pairword`: 24 old posts and the reader's message just below their newest four (12%), and `topword`: 24 old
      //   posts and the reader's newest message (12%): the reader's read holds all of their messages, so the walk below
      //   it reads the other kinds alone and takes the message below the read, if any, from that read.
      const first = (word: string, n: number) =>
        Array.from({ length: n }, (_, i) => (i === 0 ? `${word} ${word} ${word}` : `${word} old ${i}`));
      await add(first('fadedword', 30));
      await add(first('ownword', 24));
      await add(first('midword', 12));
      const pair = first('pairword', 24);
      await add(pair.slice(0, 20));
      await send('pairword note');
      await add(pair.slice(20));
      await add(first('topword', 24));
      await add(Array.from({ length: 40 }, (_, i) => `other stuff ${i}`));
      await send('commonword commonword commonword');
      for (let i = 1; i < 6; i++) await send(`commonword note ${i}`);
      await add(Array.from({ length: 30 }, (_, i) => (i % 2 ? `commonword ${i}` : `filler ${i}`)));
      for (let i = 6; i < 10; i++) await send(`commonword note ${i}`);
      for (let i = 0; i < 6; i++) await send(`ownword note ${i}`);
      await send('topword note');
      // 10 ranked candidates (2 for a common query: the newest 20 ids counted), a recent window of 1,000, no spread
      // ranges; the rare words' bound off, so only the share chooses.
      await analyzeWith(t, { rankedCandidates: 10, recentDocs: 1000, spreadRanges: 0, statsRareMatches: 0 });
    });
    after(async () => {
      restoreTuning();
      await t?.close();
    });

    /** The uuids found for `viewer`, and whether the density count ran, with the dense share at `statsDenseShare`. */
    const searchWith = async (query: string, viewer: string | null, statsDenseShare: number) => {
      searchTuning.statsDenseShare = statsDenseShare;
      const { page, texts } = await recordedSearch(t, viewer, { query, limit: 20 });
      return {
        uuids: page.data.map((item) => item.uuid),
        first: (page.data[0] as { body?: string } | undefined)?.body,
        counted: countedNewest(texts),
        // The reads of the caller's messages, not the counts that choose how to read them (fewMessagesOf).
        messageReads: texts.filter(
          (s) =>
            /d\.kind = 'messages'/.test(s) && !/count\(\*\) as n\s+from \(select 1 from search_docs/.test(s),
        ).length,
      };
    };

    // `commonw`: a prefix of `commonword`.
    for (const query of ['commonword', 'commonw', 'fadedword', 'ownword', 'midword', 'pairword', 'topword']) {
      it(`\`${query}\`: read without the count, the answer is the counted one, for a guest and a signed-in caller`, async () => {
        for (const viewer of [null, reader.uuid]) {
          const counted = await searchWith(query, viewer, 0);
          assert.equal(counted.counted, true);
          const read = await searchWith(query, viewer, 0.01);
          assert.equal(read.counted, false, 'the statistics call it dense');
          assert.deepEqual(read.uuids, counted.uuids);
          assert.ok(counted.uuids.length >= 5, `${counted.uuids.length}`);
        }
      });
    }

    it("reads the caller's messages once when the first read holds all of them, and again when it may not", async () => {
      // Besides the first read, the older matches listed after the ranked ones (a page of 20, 10 candidates) read the
      // caller's messages once, as on the counted path.
      const all = await searchWith('pairword', reader.uuid, 0.01);
      assert.equal(all.counted, false);
      assert.equal(
        all.messageReads,
        2,
        'one message of theirs holds the word: the walk below reads posts alone',
      );
      assert.equal((await searchWith('pairword', reader.uuid, 0)).messageReads, 2);
      assert.equal((await searchWith('topword', reader.uuid, 0.01)).messageReads, 2);
      assert.ok(all.uuids.length >= 10, `${all.uuids.length}`);
      // Six of their messages hold `ownword`, the first read stopped at two: the walk below reads theirs again.
      assert.equal((await searchWith('ownword', reader.uuid, 0.01)).messageReads, 3);
    });

    it('ranks only the newest matches: the oldest, most relevant one leads only when it is among them', async () => {
      // 30 `fadedword` posts and 12 `midword` posts: the newest 10 of each are ranked, the oldest follows them.
      assert.equal((await searchWith('fadedword', null, 0.01)).first, 'fadedword old 29');
      assert.equal((await searchWith('midword', null, 0.01)).first, 'midword old 11');
    });

    it('a word under the share, or a scope narrowed to a language, is counted', async () => {
      assert.equal((await searchWith('midword', null, 0.5)).counted, true);
      searchTuning.statsDenseShare = 0.01;
      const { texts } = await recordedSearch(t, null, { query: 'commonword', language: 'en', limit: 20 });
      assert.ok(countedNewest(texts));
    });
  });
}

for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`search: a dense word read through the index of recent documents [${dialect.name}]`, () => {
    let t: TestApp;
    let reader: TestUser;

    before(async () => {
      const world = await startReaderWorld(dialect);
      ({ t, reader } = world);
      // 1,200 posts, `idxword` in one of 33 (3%), the first of them the most relevant; the reader's message holds it.
      await insertPosts(
        t,
        world.author.uuid,
        Array.from({ length: 1200 }, (_, i) =>
          i === 0 ? 'idxword idxword idxword' : i % 33 === 0 ? `idxword ${i}` : `other words ${i}`,
        ),
      );
      await world.send('idxword note');
      // 50 ranked candidates (10 for a common query: the newest 100 ids counted), a window of 300 ids above the
      // index's bound, 375 ids below the newest.
      await refreshRecentIndex(t.ctx.db, 300);
      await analyzeWith(t, { rankedCandidates: 50, recentDocs: 300, spreadRanges: 0, statsRareMatches: 0 });
    });
    after(async () => {
      restoreTuning();
      await t?.close();
    });

    it('reads the window through that index before any count, and answers as the counted path', async () => {
      for (const viewer of [null, reader.uuid]) {
        const run = async (statsDenseShare: number) => {
          searchTuning.statsDenseShare = statsDenseShare;
          const { page, texts } = await recordedSearch(t, viewer, { query: 'idxword', limit: 50 });
          return {
            uuids: page.data.map((item) => item.uuid),
            counted: countedNewest(texts),
            indexed: texts.filter((s) => s.includes('strip(d.tsv)')).length,
          };
        };
        const counted = await run(0);
        assert.equal(counted.counted, true);
        const read = await run(0.01);
        assert.equal(read.counted, false, 'the statistics call it dense');
        assert.equal(read.indexed, 1, 'one read of the window, through the index of recent documents');
        assert.deepEqual(read.uuids, counted.uuids);
        assert.equal(read.uuids.length, viewer === null ? 37 : 38);
      }
    });
  });
}
