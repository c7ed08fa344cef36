import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call, readAllPages } from './world.ts';

// Queries with known best answers (docs/search.md, "Ranking design" and "Speed"), in a world large enough for every
// path of the bounded ranking once its sizes are shrunk: 25 ranked candidates (5 for a common query), a recent window
// of 120 documents, "common" meaning 5 matches or more among the newest 50 documents.
const TUNING = { rankedCandidates: 25, recentDocs: 120 };

/** A long body around one word, so the word is rare inside it. */
const long = (word: string, extra = '') =>
  `${word} ${extra} alpha beta gamma delta epsilon eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau`;

interface RelevanceWorld {
  ids: Record<string, string>;
}

/** Posts in creation order (the index order); see the expectations below for why each one is there. */
async function buildRelevanceWorld(t: TestApp): Promise<RelevanceWorld> {
  const ids: Record<string, string> = {};
  const writers: TestUser[] = [];
  for (let i = 0; i < 4; i++) writers.push(await t.createUser(`writer_${i}`));
  let n = 0;
  const post = async (text: string, label?: string) => {
    const who = writers[n++ % writers.length] as TestUser;
    const created = await call(t, 'POST', '/posts', who.token, { body: text, visibility: 'public' });
    if (label) ids[label] = created.uuid;
  };
  ids.network = (
    await call(t, 'POST', '/networks', (writers[0] as TestUser).token, {
      name: 'Quasar Club',
      description: 'people who look up',
    })
  ).uuid;
  await post('quasar quasar nebula', 'rareBest');
  await post('common common common common', 'commonOldBest');
  for (let i = 0; i < 150; i++) {
    if (i === 12) await post('zeta zeta zeta', 'zetaOldBest');
    else if (i === 60) await post('zeta zeta filler', 'zetaBest');
    else await post(`filler number ${i} common words${i % 12 === 0 ? ' zeta' : ''} and more words here`);
  }
  await post(long('quasar', 'nebula'), 'rareB');
  await post(long('quasar'), 'rareC');
  for (let i = 0; i < 8; i++) await post(`late filler ${i} common words and more words here`);
  await post('common common common', 'commonBest');
  await post(long('quasar'), 'rareD');
  await post(long('quasar'), 'rareE');
  return { ids };
}

/** Orders of the first engine, compared with the next engine's. */
const firstEngine = new Map<string, string[]>();

for (const dialect of testDialects()) {
  describe(`search relevance: known best answers first [${dialect.name}]`, () => {
    let t: TestApp;
    let w: RelevanceWorld;
    const standard = { ...searchTuning };
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const order = (items: any[]) => items.map((i) => i.uuid as string);
    const label = (uuid: string | undefined) =>
      Object.entries(w.ids).find(([, u]) => u === uuid)?.[0] ?? 'other';
    /** Every match of a query in result order (pages of 100, the largest limit). */
    const search = (query: string) =>
      readAllPages(t, `/search?query=${encodeURIComponent(query)}`, t.guest, 100);

    before(async () => {
      t = await startTestApp(dialect);
      w = await buildRelevanceWorld(t);
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    it('a rare query ranks all its matches: an old, dense match and a matching name come first', async () => {
      const found = await search('quasar');
      assert.deepEqual(found.map(label), ['network', 'rareBest', 'rareE', 'rareD', 'rareC', 'rareB']);
      // Names weigh three times the body; then the short body with the word twice, however old.
      const both = await search('quasar nebula');
      assert.deepEqual(both.map(label), ['rareBest', 'rareB']);
    });

    it('a common query ranks its newest matches: the densest of them first, older ones after', async () => {
      const found = await search('common');
      assert.equal(found.length, 148 + 1 + 8 + 1, 'every match, once');
      assert.equal(label(found[0]), 'commonBest');
      // commonOldBest is denser but older than the ranked newest matches: it follows newest first, so last.
      assert.equal(label(found[found.length - 1]), 'commonOldBest');
    });

    it('a middling query ranks its matches among the recent documents', async () => {
      const found = await search('zeta');
      assert.equal(found.length, 13);
      assert.equal(label(found[0]), 'zetaBest');
      // Nine matches lie in the recent window and are ranked; zetaOldBest is older, denser too, and comes after
      // them with the other older matches, newest first (the second newest of the four).
      assert.equal(label(found[11]), 'zetaOldBest');
      assert.equal(new Set(found).size, found.length);
    });

    it('a one-letter last word is a whole word, two letters a prefix', async () => {
      await call(t, 'POST', '/posts', (await t.createUser('letters')).token, {
        body: 'x marks the spot, xylophone',
      });
      const x = await call(t, 'GET', '/search?query=x', t.guest);
      assert.deepEqual(
        x.map((i: { body: string }) => i.body),
        ['x marks the spot, xylophone'],
      );
      const xylo = await call(t, 'GET', '/search?query=xylophone%20m', t.guest);
      assert.equal(xylo.length, 0, 'm is not a prefix of marks');
      const xy = await call(t, 'GET', '/search?query=xy', t.guest);
      assert.equal(xy.length, 1, 'xy is a prefix of xylophone');
    });

    it('paging yields the same total order, page after page', async () => {
      for (const query of ['common', 'zeta', 'quasar']) {
        const all = await search(query);
        const paged: string[] = [];
        for (let offset = 0; offset < all.length; offset += 7) {
          paged.push(
            ...order(await call(t, 'GET', `/search?query=${query}&limit=7&offset=${offset}`, t.guest)),
          );
        }
        assert.deepEqual(paged, all, query);
      }
    });

    it('ranks identically on every engine', async () => {
      for (const query of [
        'quasar',
        'quasar nebula',
        'common',
        'zeta',
        'common words',
        'filler n',
        'words',
      ]) {
        const url = `/search?query=${encodeURIComponent(query)}&limit=100`;
        const texts = (await call(t, 'GET', url, t.guest)).map(
          (i: { body?: string; name?: string }) => i.body ?? i.name,
        );
        // `filler n` finds nothing on purpose (a one-letter last word is matched as a whole word); every other query
        // must find something, so the engines are compared on results.
        if (query !== 'filler n') assert.ok(texts.length > 0, `${query} finds something`);
        const known = firstEngine.get(query);
        if (known) assert.deepEqual(texts, known, query);
        else firstEngine.set(query, texts);
      }
    });
  });
}
