// A word dense among the newest documents of one kind that has a GIN index of its own (users, comments) used to be
// walked in id order over the whole recent window on PostgreSQL. For `ann` in the seeded world's users that read the
// newest 30,000 users (18 ms) to find about 1,000 of the 3,465 that match, which the user index reads in 4.7 ms. The
// search now compares the two plans' estimated costs (kindIndexCheaper); the answer must not change, on either
// engine, and on PostgreSQL the users must come from the user kind's own GIN index.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { searchUsers } from '../../src/modules/search/search.service.ts';
import { kindIndexCheaper, searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import {
  explainRecorded,
  insertAnnabels,
  recordingQueries,
  startTestApp,
  type TestApp,
  testDialects,
} from '../helper.ts';
import { call, readAllPages } from './world.ts';

describe('kindIndexCheaper', () => {
  const seeded = { spanIds: 2000, kindIds: 100_001, windowIds: 30_000, most: 1000 };
  it('the seeded users: 73 of the newest 2,000 match, so the index reads about 3,650 entries, the walk 27,000 rows', () => {
    assert.equal(kindIndexCheaper({ ...seeded, newest: 73, spanDocs: 2000 }), true);
  });
  it('a word in a tenth of the users: 10,000 entries cost more than walking the window', () => {
    assert.equal(kindIndexCheaper({ ...seeded, newest: 199, spanDocs: 2000 }), false);
  });
  it('comments among posts (a quarter of the ids): the walk reads only the comments of the window', () => {
    // 1% of the ids match: 12,900 entries over 1.29 million ids, against the window's 7,000 comments.
    const comments = { spanIds: 2000, kindIds: 1_290_000, windowIds: 30_000, most: 1000 };
    assert.equal(kindIndexCheaper({ ...comments, newest: 20, spanDocs: 460 }), false);
  });
  it('nothing to estimate from: no match or no document of the kind in the newest range', () => {
    assert.equal(kindIndexCheaper({ ...seeded, newest: 0, spanDocs: 2000 }), false);
    assert.equal(kindIndexCheaper({ ...seeded, newest: 5, spanDocs: 0 }), false);
  });
});

// Shrunk sizes: 50 ranked candidates (a query is common with 10 matches among the newest 100 ids), a recent window of
// 300 ids. 600 users, one in 20 named Annabel: 5 of the newest 100 match (dense, not common), 30 in all.
const TUNING = { rankedCandidates: 50, recentDocs: 300 };
const USERS = 600;
const EVERY = 20;

for (const dialect of testDialects()) {
  describe(`search: a word dense in one kind's newest documents [${dialect.name}]`, () => {
    let t: TestApp;
    const standard = { ...searchTuning };
    // Matching users, oldest first, and the one whose name is the word itself (the best match).
    const annabels: string[] = [];
    let best = '';

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      // In the recent window, one matching user is named the word exactly: it ranks first.
      const inserted = await insertAnnabels(t.ctx.db, USERS, EVERY, [USERS - 5 * EVERY - 1]);
      annabels.push(...inserted.matching);
      best = inserted.exact[0] as string;
      if (dialect.name === 'postgres') await sql`analyze search_docs`.execute(t.ctx.db);
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('every match once: the ranked recent window (the exact name first), then the older ones newest first', async () => {
      const found: string[] = [];
      for (let offset = 0; ; offset += 7) {
        const url = `/search/users?query=ann&limit=7&offset=${offset}`;
        const page = (await call(t, 'GET', url, t.guest)) as { uuid: string }[];
        found.push(...page.map((u) => u.uuid));
        if (page.length < 7) break;
      }
      const newestFirst = [...annabels].reverse();
      // The recent window (the newest 300 ids) holds the newest 15 matches; they tie but for the exact name.
      const recent = newestFirst.slice(0, 15);
      const expected = [best, ...recent.filter((u) => u !== best), ...newestFirst.slice(15)];
      assert.deepEqual(found, expected);
    });

    it('PostgreSQL reads every match of the kind through the index, not a walk of the window', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await searchUsers({ ...t.ctx, readDb: db }, null, { query: 'ann', limit: 5 }, false);
      assert.equal(page.data[0]?.uuid, best);
      const plans = await explainRecorded(t.ctx.db, nodes, (text) => text.includes('search_docs d'));
      // The count of the newest range, then one read of the candidates: every match of the kind by `@@` (which the
      // GIN indexes serve; on the seeded world, search_docs_tsv_user), materialized and sorted. The walk it replaces
      // tested ts_match_vq on each row of the window in id order.
      const candidates = plans.filter((p) => !p.includes('Aggregate'));
      assert.equal(candidates.length, 1, plans.join('\n\n'));
      assert.match(candidates[0] as string, /CTE m[\s\S]*tsv @@/, candidates[0]);
      assert.doesNotMatch(candidates[0] as string, /ts_match_vq/, candidates[0]);
    });

    it('every match of one whole word, and of two words, newest first past the ranked ones', async () => {
      const all = (query: string) =>
        readAllPages(t, `/search/users?query=${encodeURIComponent(query)}`, t.guest, 10);
      // `annabel` is longer than any prefix index: it stands for the one indexed word it starts. `Ann` holds neither.
      const named = annabels.filter((u) => u !== best);
      assert.equal(named.length, USERS / EVERY - 1);
      assert.deepEqual(new Set(await all('annabel')), new Set(named));
      // Only `Annabel 599`, the newest, holds both words.
      assert.deepEqual(await all('annabel 599'), [annabels.at(-1)]);
    });

    it('PostgreSQL counts one word in the users by `@@`, which their GIN index may serve; two words by ts_match_vq', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const counts = async (query: string) => {
        const { db, nodes } = recordingQueries(t.ctx.db);
        await searchUsers({ ...t.ctx, readDb: db }, null, { query, limit: 5 }, false);
        const compiled = nodes.map((node) => t.ctx.db.getExecutor().compileQuery(node, createQueryId()).sql);
        return compiled.filter((text) => text.includes('as newest'));
      };
      // The world was analyzed: without this, its statistics call these words rare and no count runs at all
      // (docs/search.md, "Rare words by the statistics").
      const standard = searchTuning.statsRareMatches;
      searchTuning.statsRareMatches = 0;
      try {
        const [one] = await counts('annabel');
        assert.match(one ?? '', /d\.tsv @@/, one);
        assert.doesNotMatch(one ?? '', /ts_match_vq/, one);
        const [two] = await counts('annabel 599');
        assert.match(two ?? '', /ts_match_vq/, two);
        assert.doesNotMatch(two ?? '', /d\.tsv @@/, two);
      } finally {
        searchTuning.statsRareMatches = standard;
      }
    });
  });
}
