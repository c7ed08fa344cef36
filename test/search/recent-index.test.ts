// PostgreSQL walked the recent window (the newest 30,000 documents) row by row for a word middling among them: `love`
// in the seeded world tested 30,000 rows to keep about 530 (10.6 ms), 2.75 times SQLite's whole request over HTTP.
// `search compact` now keeps a GIN index of the newest documents (refreshRecentIndex, migration 0024), which such a
// search reads instead when its estimate says so (recentIndexCheaper). The answers must not change: for a guest, for a
// signed-in user with messages of their own, and when the window reaches below the index's bound.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { nowIso } from '../../src/db/time.ts';
import { reindex, search } from '../../src/modules/search/search.service.ts';
import { recentBoundLiteral, refreshRecentIndex } from '../../src/modules/search/search-index.repository.ts';
import { recentIndexCheaper, searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import {
  bulkUserRow,
  explainRecorded,
  insertAnnabels,
  insertInBatches,
  recordingQueries,
  startTestApp,
  type TestApp,
  type TestUser,
  testDialects,
} from '../helper.ts';
import { call } from './world.ts';

describe('recentIndexCheaper', () => {
  const seeded = { spanIds: 2000, indexIds: 60_000, windowIds: 30_000, most: 1000 };
  it('love in the seeded world: 36 of the newest 2,000 match, about 1,100 entries against the 30,000-row walk', () => {
    assert.equal(recentIndexCheaper({ ...seeded, newest: 36 }), true);
  });
  it('a word in one document of ten: its walk stops after 10,000 rows, the index holds 6,000 entries', () => {
    assert.equal(recentIndexCheaper({ ...seeded, newest: 199 }), false);
  });
  it('fitted on the seeded world, an index a window and a quarter deep: `it` (163 of 2,000) walked, `they` (64) read', () => {
    const fresh = { ...seeded, indexIds: 37_500 };
    assert.equal(recentIndexCheaper({ ...fresh, newest: 163 }), false);
    assert.equal(recentIndexCheaper({ ...fresh, newest: 96 }), false);
    assert.equal(recentIndexCheaper({ ...fresh, newest: 64 }), true);
  });
  it('an index never moved up (over the whole world, 1.4 million ids) costs more than the walk', () => {
    assert.equal(recentIndexCheaper({ ...seeded, indexIds: 1_400_000, newest: 36 }), false);
  });
  it('an empty index range or count range estimates nothing', () => {
    assert.equal(recentIndexCheaper({ ...seeded, indexIds: 0, newest: 36 }), false);
    assert.equal(recentIndexCheaper({ ...seeded, spanIds: 0, newest: 36 }), false);
  });
});

describe('recentBoundLiteral', () => {
  it('writes a whole number as it is and refuses anything else, since it becomes SQL text', () => {
    assert.equal(recentBoundLiteral(1_368_648), '1368648');
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      assert.throws(() => recentBoundLiteral(bad), /not a whole number/);
    }
  });
});

// Shrunk sizes: 50 ranked candidates (a query is common with 10 matches among the newest 100 ids), a recent window of
// 300 ids, so the index of recent documents starts 375 ids below the newest. 1,200 users, one in 20 named Annabel: 5
// of the newest 100 match (dense enough to walk, not common), 60 in all. Two are named Ann, the word itself: one in
// the window, one about 740 ids below the newest, under the index's bound.
// The statistics' dense words off (word-stats.test.ts tests them): these tests read the counted path's plans.
const TUNING = { rankedCandidates: 50, recentDocs: 300, statsDenseShare: 0 };
const USERS = 1200;
const EVERY = 20;

for (const dialect of testDialects()) {
  describe(`search: the index of recent documents [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    const standard = { ...searchTuning };
    // Matching users, oldest first, and the one whose name is the word itself (the best match).
    const annabels: string[] = [];
    let best = '';
    let older = '';
    let message = '';

    /** Every page of /search?query=ann as `token`, in order. */
    const everyMatch = async (token: string): Promise<string[]> => {
      const found: string[] = [];
      for (let offset = 0; ; offset += 9) {
        const page = (await call(t, 'GET', `/search?query=ann&limit=9&offset=${offset}`, token)) as {
          uuid: string;
        }[];
        found.push(...page.map((r) => r.uuid));
        if (page.length < 9) break;
      }
      return found;
    };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      alice = await t.createUser('alice');
      bob = await t.createUser('bob');
      const inserted = await insertAnnabels(t.ctx.db, USERS, EVERY, [
        USERS - 3 * EVERY - 1,
        USERS - 37 * EVERY - 1,
      ]);
      annabels.push(...inserted.matching);
      [best, older] = inserted.exact as [string, string];
      // Alice's own message, newer than every user: found by her only.
      message = (
        await call(t, 'POST', '/messages', alice.token, { recipient_uuid: bob.uuid, body: 'ann, call me' })
      ).uuid;
      if (dialect.name === 'postgres') await sql`analyze search_docs`.execute(t.ctx.db);
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('every match once, the same before and after the index is built, for a guest and for the sender', async () => {
      const newestFirst = [...annabels].reverse();
      // The recent window (the newest 300 ids) holds the newest 15 matches; they tie but for the exact name.
      const recent = newestFirst.slice(0, 15);
      const expected = [best, ...recent.filter((u) => u !== best), ...newestFirst.slice(15)];
      const asGuest = await everyMatch(t.guest);
      const asAlice = await everyMatch(alice.token);
      assert.deepEqual(asGuest, expected);
      assert.deepEqual(asAlice.toSorted(), [...expected, message].toSorted());
      assert.deepEqual(await everyMatch(bob.token), asAlice, 'the recipient finds the message too');
      if (dialect.name !== 'postgres') return;
      const bound = await refreshRecentIndex(t.ctx.db, searchTuning.recentDocs);
      assert.ok(bound !== undefined && bound > 0, `the index starts above the first document (${bound})`);
      assert.deepEqual(await everyMatch(t.guest), asGuest);
      assert.deepEqual(await everyMatch(alice.token), asAlice);
      // A window reaching below the bound is walked: the index would miss its oldest matches, and the older Ann, ranked
      // second in a window of 900 ids, would follow in the unranked tail instead.
      Object.assign(searchTuning, { recentDocs: 900 });
      try {
        const wide = await everyMatch(t.guest);
        assert.deepEqual(wide, [best, older, ...newestFirst.filter((u) => u !== best && u !== older)]);
      } finally {
        Object.assign(searchTuning, TUNING);
      }
    });

    it('PostgreSQL reads the window from the index of recent documents, not row by row', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const bound = await refreshRecentIndex(t.ctx.db, searchTuning.recentDocs);
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await search({ ...t.ctx, readDb: db }, null, { query: 'ann', limit: 5 });
      assert.equal(page.data[0]?.uuid, best);
      const plans = await explainRecorded(t.ctx.db, nodes, (text) => text.includes('strip(d.tsv)'));
      assert.equal(plans.length, 1, 'one read of the window, through the index');
      assert.match(plans[0] as string, /Bitmap Index Scan on search_docs_recent_tsv/, plans[0]);
      // The bound is written as the index's predicate writes it, which PostgreSQL then drops as that predicate. Bound
      // as a parameter (a bigint) it stayed a condition of its own, which the planner intersected in the seeded world
      // with the primary key's 87,500 ids above it (2.2 ms of a 4 ms read); this world is too small to show that plan.
      const walks = nodes
        .map((n) => t.ctx.db.getExecutor().compileQuery(n, createQueryId()).sql)
        .filter((text) => text.includes('strip(d.tsv)'));
      assert.equal(walks.length, 1);
      assert.match(walks[0] as string, new RegExp(`d\\.id > ${bound}\\s`));
    });

    it('search compact builds the index again only once it lags the newest documents by the window', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const first = await refreshRecentIndex(t.ctx.db, searchTuning.recentDocs);
      const oid = async () =>
        (await sql<{ oid: number }>`select 'search_docs_recent_tsv'::regclass::oid as oid`.execute(t.ctx.db))
          .rows[0]?.oid;
      const before = await oid();
      // Fewer new documents than the window: the index stays.
      const more = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) =>
          bulkUserRow(`later${from + i}`, nowIso(), { display_name: 'Zed' }),
        );
      await insertInBatches(t.ctx.db, 'users', more(0, 100));
      assert.equal(await refreshRecentIndex(t.ctx.db, searchTuning.recentDocs), first);
      assert.equal(await oid(), before);
      // A window's worth more: built again, its bound moved up by as many ids.
      await insertInBatches(t.ctx.db, 'users', more(100, 300));
      const moved = await refreshRecentIndex(t.ctx.db, searchTuning.recentDocs);
      const top = await sql<{ top: string }>`
        select max(id) as top from search_docs where kind <> 'messages'`.execute(t.ctx.db);
      // A window and a quarter below the newest document other than a message (Alice's message holds an id between
      // the users).
      assert.equal(moved, Number(top.rows[0]?.top) - 375);
      assert.ok((moved as number) > (first as number) + 300);
      assert.notEqual(await oid(), before);
      const stored = await sql<{ bound: string }>`select bound from search_recent`.execute(t.ctx.db);
      assert.deepEqual(
        stored.rows.map((r) => Number(r.bound)),
        [moved],
      );
      const predicate = await sql<{ p: string }>`
        select pg_get_expr(indpred, indrelid) as p from pg_index where indexrelid = 'search_docs_recent_tsv'::regclass`.execute(
        t.ctx.db,
      );
      assert.equal(predicate.rows[0]?.p, `((id > ${moved}) AND (kind <> 'messages'::text))`);
      // `search reindex` numbers the documents from 1 again: the bound is forgotten, then built again below the top.
      await reindex(t.ctx);
      assert.deepEqual((await sql`select bound from search_recent`.execute(t.ctx.db)).rows, []);
      assert.equal((await everyMatch(t.guest)).length, annabels.length);
      const rebuilt = await refreshRecentIndex(t.ctx.db, searchTuning.recentDocs);
      const renumbered = await sql<{ top: string }>`
        select max(id) as top from search_docs where kind <> 'messages'`.execute(t.ctx.db);
      assert.equal(rebuilt, Number(renumbered.rows[0]?.top) - 375);
      const again = await sql<{ bound: string }>`select bound from search_recent`.execute(t.ctx.db);
      assert.deepEqual(
        again.rows.map((r) => Number(r.bound)),
        [rebuilt],
      );
      // Two commands at once: one builds, the other waits for it and finds the index fresh.
      await sql`delete from search_recent`.execute(t.ctx.db);
      const both = await Promise.all([
        refreshRecentIndex(t.ctx.db, searchTuning.recentDocs),
        refreshRecentIndex(t.ctx.db, searchTuning.recentDocs),
      ]);
      assert.deepEqual(both, [rebuilt, rebuilt]);
      const indexes = await sql<{ name: string }>`
        select indexrelid::regclass::text as name from pg_index
        where indrelid = 'search_docs'::regclass and indexrelid::regclass::text like 'search_docs_recent%'`.execute(
        t.ctx.db,
      );
      assert.deepEqual(
        indexes.rows.map((r) => r.name),
        ['search_docs_recent_tsv'],
      );
    });
  });
}
