// docs/search.md, "Sparse queries in one read (PostgreSQL)": a query the newest range predicts sparse in the recent
// window, and the spread ranges find sparse elsewhere, has its newest matches of any age read in one statement
// through GIN, where the window's read and the older read each read every entry of the words. Its matches cluster
// just below the window, so the samples do not call it rare everywhere. Sizes shrunk: 100 ranked candidates (20 for a
// common query, so the newest range is 200 ids), a recent window of 400 ids, two spread ranges of 10 ids, no
// statistics. One match among the newest 200 ids is then sparse, but not dense enough to walk (one in 100), and
// scales to more than 100 matches only over more than 22,000 ids: the world has 24,500.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';
import { insertPosts, readAllPages, recordedSearch } from './world.ts';

const TUNING = {
  rankedCandidates: 100,
  recentDocs: 400,
  densitySample: 10,
  olderChunk: 20,
  spreadRanges: 2,
  spreadRangeIds: 10,
  statsRareMatches: 0,
  statsDenseShare: 0,
};

for (const dialect of testDialects()) {
  describe(`search: a query sparse in the window and the spread ranges [${dialect.name}]`, () => {
    let t: TestApp;
    const standard = { ...searchTuning };
    /** `nebula` posts, newest first: the one of the newest range, the 60 clustered below the window, the 45 oldest. */
    let newest: string;
    let cluster: string[];
    let oldest: string[];
    let best: string;

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      const author = await t.createUser('astronomer');
      const add = (bodies: string[]) => insertPosts(t, author.uuid, bodies);
      const filler = (n: number, label: string) =>
        Array.from({ length: n }, (_, i) => `${label} filler ${i}`);
      const nebulas = (n: number, label: string) =>
        Array.from({ length: n }, (_, i) => `${label} nebula with many other words around it ${i}`);
      oldest = (await add(nebulas(45, 'old'))).reverse();
      // The spread ranges fall among this filler.
      await add(filler(24_000, 'middle'));
      const below = [...nebulas(30, 'cluster'), 'nebula nebula nebula', ...nebulas(29, 'cluster')];
      cluster = (await add(below)).reverse();
      best = cluster[29] as string;
      // The window (the newest 400 ids) holds one match, which the newest range (200 ids) holds too.
      await add(filler(300, 'window'));
      [newest] = (await add(['newest nebula with many other words around it'])) as [string];
      await add(filler(150, 'top'));
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('ranks the newest 100 matches of any age together, then the older ones newest first', async () => {
      const found = await readAllPages(t, '/search?query=nebula', t.guest, 100);
      assert.equal(found.length, 106, 'every match, once');
      assert.equal(new Set(found).size, 106);
      assert.equal(found[0], best, 'the dense match below the window ranks first');
      const ranked = [newest, ...cluster, ...oldest.slice(0, 39)];
      assert.deepEqual(new Set(found.slice(0, 100)), new Set(ranked));
      assert.deepEqual(found.slice(100), oldest.slice(39));
      assert.deepEqual(
        await readAllPages(t, '/search?query=nebula', t.guest, 7),
        found,
        'pages give the same order',
      );
    });

    it('PostgreSQL reads its candidates in one read through the GIN index', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { page, texts } = await recordedSearch(t, null, { query: 'nebula', limit: 10 });
      assert.equal(page.data[0]?.uuid, best);
      const reads = texts.filter((s) =>
        /select d\.id, d\.kind, d\.uuid, d\.title, d\.body from search_docs d/.test(s),
      );
      assert.equal(reads.length, 1, reads.join('\n\n'));
      assert.match(reads[0] as string, /where d\.tsv @@/);
    });
  });
}
