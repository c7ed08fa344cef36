import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { search } from '../../src/modules/search/search.service.ts';
import {
  rareEverywhereEstimate,
  recentWindowSparse,
  searchTuning,
} from '../../src/modules/search/search-ranking.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call, readAllPages } from './world.ts';

// A query sparse among the newest documents (docs/search.md, "Sparse queries in one walk (SQLite)"). The tuning
// shrinks the sizes: 100 ranked candidates, 20 for a common query, so the newest range counted is 200 ids; a recent
// window of 400 ids. One match among the newest 200 then predicts fewer than 5 in the window, and SQLite walks the
// window and the older ids in one statement. The answers must be those of the two walks it replaces.
const TUNING = { rankedCandidates: 100, recentDocs: 400 };

/** A long body around one word, so the word is rare inside it. */
const long = (word: string) => `${word} alpha beta gamma delta epsilon eta theta iota kappa lambda mu nu xi`;

interface SparseWorld {
  ids: Record<string, string>;
  /** `orchid` posts in the window (ids of the newest 400 but not the newest 200), oldest first. */
  windowOrchids: string[];
  /** `orchid` posts older than the window, oldest first. */
  olderOrchids: string[];
}

/** 430 posts in creation order (the index order). */
async function buildSparseWorld(t: TestApp): Promise<SparseWorld> {
  const ids: Record<string, string> = {};
  const windowOrchids: string[] = [];
  const olderOrchids: string[] = [];
  const writers: TestUser[] = [];
  for (let i = 0; i < 3; i++) writers.push(await t.createUser(`gardener_${i}`));
  let n = 0;
  const post = async (text: string) => {
    const who = writers[n++ % writers.length] as TestUser;
    return (await call(t, 'POST', '/posts', who.token, { body: text, visibility: 'public' })).uuid as string;
  };
  // Older than the window: orchids (the first and densest one oldest of all) and lotuses (one dense).
  ids.orchidOldDense = await post('orchid orchid orchid');
  olderOrchids.push(ids.orchidOldDense);
  ids.lotusOldDense = await post('lotus lotus lotus');
  for (let i = 0; i < 8; i++) olderOrchids.push(await post(long('orchid')));
  for (let i = 0; i < 4; i++) await post(long('lotus'));
  for (let i = 0; i < 16; i++) await post(`older filler ${i}`);
  // The window's older half: 24 orchids, one short and dense; two lotuses.
  for (let i = 0; i < 200; i++) {
    if (i === 100) {
      ids.orchidBest = await post('orchid orchid garden');
      windowOrchids.push(ids.orchidBest);
    } else if (i % 8 === 3) windowOrchids.push(await post(long('orchid')));
    else if (i === 50 || i === 150) await post(long('lotus'));
    else await post(`window filler ${i}`);
  }
  // The newest 200: one orchid, no lotus.
  for (let i = 0; i < 200; i++) {
    if (i === 20) {
      ids.orchidNewest = await post(long('orchid'));
      windowOrchids.push(ids.orchidNewest);
    } else await post(`newest filler ${i}`);
  }
  return { ids, windowOrchids, olderOrchids };
}

for (const dialect of testDialects()) {
  describe(`search: a query sparse among the newest documents [${dialect.name}]`, () => {
    let t: TestApp;
    let w: SparseWorld;
    const standard = { ...searchTuning };
    /** Every match of a query in result order, in pages of `limit`. */
    const searchAll = (query: string, limit = 100) =>
      readAllPages(t, `/search?query=${encodeURIComponent(query)}`, t.guest, limit);

    before(async () => {
      t = await startTestApp(dialect);
      w = await buildSparseWorld(t);
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('with at least the common count in the window, ranks the window and then the older matches, newest first', async () => {
      const found = await searchAll('orchid');
      assert.equal(found.length, w.windowOrchids.length + w.olderOrchids.length, 'every match, once');
      assert.equal(new Set(found).size, found.length);
      assert.equal(found[0], w.ids.orchidBest);
      // The 25 window matches are ranked; the older ones follow unranked, newest first, the densest of all last.
      assert.deepEqual(new Set(found.slice(0, w.windowOrchids.length)), new Set(w.windowOrchids));
      assert.deepEqual(found.slice(w.windowOrchids.length), [...w.olderOrchids].reverse());
    });

    it('with fewer than the common count in the window, ranks every match of any age together', async () => {
      const found = await searchAll('lotus');
      assert.equal(found.length, 7);
      assert.equal(found[0], w.ids.lotusOldDense, 'the dense old match ranks first');
    });

    it('pages give the same total order', async () => {
      for (const query of ['orchid', 'lotus']) {
        assert.deepEqual(await searchAll(query, 6), await searchAll(query), query);
      }
    });

    it('SQLite reads the window and the older matches in one walk', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await search({ ...t.ctx, readDb: db }, null, { query: 'lotus', limit: 5 });
      assert.equal(page.data[0]?.uuid, w.ids.lotusOldDense);
      const walks = nodes
        .map((node) => db.getExecutor().compileQuery(node, { queryId: 'walk' }).sql)
        .filter((text) =>
          /select d\.id, d\.kind, d\.uuid, search_stats\(\?, d\.title, d\.body\) as stats\s+from "search_fts"/.test(
            text,
          ),
        );
      assert.equal(walks.length, 1, walks.join('\n\n'));
    });
  });
}

describe('search: when a window counts as sparse', () => {
  it('at the standard sizes, up to 3 matches among the newest 2,000 ids predict fewer than 50 in the 30,000-id window', () => {
    const sizes = { spanIds: 2000, windowIds: 30_000, fewest: 200 };
    for (const newest of [0, 1, 3]) assert.equal(recentWindowSparse({ ...sizes, newest }), true, `${newest}`);
    for (const newest of [4, 50]) assert.equal(recentWindowSparse({ ...sizes, newest }), false, `${newest}`);
    assert.equal(recentWindowSparse({ ...sizes, spanIds: 0, newest: 0 }), false);
  });
});

describe('search: when a word counts as rare everywhere (PostgreSQL)', () => {
  it('scales the matches counted among the newest ids and the spread ranges to every id', () => {
    // The seeded world: 2,000 newest ids and 4 ranges of 250 counted, 1,456,000 ids in all, 1,000 ranked candidates.
    const sizes = { countedIds: 3000, allIds: 1_456_000, most: 1000 };
    assert.equal(rareEverywhereEstimate({ ...sizes, newest: 0, spread: 0 }), true);
    assert.equal(rareEverywhereEstimate({ ...sizes, newest: 0, spread: 1 }), true, 'about 485 matches');
    assert.equal(rareEverywhereEstimate({ ...sizes, newest: 1, spread: 1 }), true, 'about 971');
    assert.equal(rareEverywhereEstimate({ ...sizes, newest: 2, spread: 1 }), false, 'about 1,456');
    assert.equal(
      rareEverywhereEstimate({ ...sizes, newest: 0, spread: 1, most: 200 }),
      false,
      'a /search/types column',
    );
    assert.equal(
      rareEverywhereEstimate({ ...sizes, newest: 0, spread: null }),
      false,
      'the spread was not counted',
    );
  });
});
