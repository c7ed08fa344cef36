import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';
import { call } from './world.ts';

// Case, diacritics, ß, ligatures and other compatibility forms fold the same way on SQLite and PostgreSQL, for the
// query and for the indexed text alike, so both engines find exactly the same items.
const TEXTS: [string, string][] = [
  ['straße anna', 'de'],
  ['STRASSE bob', 'de'],
  ['Straßenbahn fahren', 'de'],
  ['Grüße aus Köln', 'de'],
  ['ﬁnance club', 'en'],
  ['finance talk', 'en'],
  ['ｆｕｌｌ width', 'en'],
  ['İstanbul trip', 'tr'],
  ['ıspanak yemeği', 'tr'],
  ['Æble pie', 'da'],
  ['ΟΔΟΣ μεγάλη', 'en'],
  ['한국어 공부', 'en'],
  ['がっこう', 'en'],
];
const QUERIES = [
  'straße',
  'strasse',
  'STRAẞE',
  'stras',
  'straßenb',
  'grusse',
  'GRÜSSE köln',
  'finance',
  'ﬁnance',
  'full',
  'istanbul',
  'İSTANBUL',
  'ispanak',
  'ıspanak',
  'æble',
  'ÆBLE',
  'οδος',
  'οδός',
  '한국어',
  'かっこう',
];
const LANGUAGES = ['', '&language=de', '&language=en', '&language=tr'];

/** What a user sees for each query: post bodies and network names, per column of /search/types and /search. */
async function answers(t: TestApp): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const q of QUERIES) {
    for (const lang of LANGUAGES) {
      const url = `/search/types?query=${encodeURIComponent(q)}${lang}`;
      const typed = await call(t, 'GET', url, t.guest);
      out[url] = {
        post: typed.post.map((p: { body: string }) => p.body),
        network: typed.network.map((n: { name: string }) => n.name),
      };
    }
    const mixed = await call(t, 'GET', `/search?query=${encodeURIComponent(q)}`, t.guest);
    out[`/search ${q}`] = mixed.map((i: { body?: string; name?: string }) => i.body ?? i.name).sort();
  }
  return out;
}

describe('search folding: German, Turkish, Greek, ligatures and compatibility forms', () => {
  const results = new Map<string, Record<string, unknown>>();
  const apps: TestApp[] = [];

  before(async () => {
    for (const dialect of testDialects()) {
      const t = await startTestApp(dialect);
      apps.push(t);
      const u = await t.createUser('writer');
      for (const [text, language] of TEXTS) {
        await call(t, 'POST', '/posts', u.token, { body: text, visibility: 'public', language });
        await call(t, 'POST', '/networks', u.token, { name: `${text} net`, description: 'folding' });
      }
      results.set(dialect.name, await answers(t));
    }
  });
  after(async () => {
    for (const t of apps) await t.close();
  });

  for (const dialect of testDialects()) {
    it(`[${dialect.name}] a query finds its text whatever the spelling of case, ß, ligatures and accents`, () => {
      const r = results.get(dialect.name) as Record<string, { post: string[] } | string[]>;
      const posts = (q: string, lang = '') =>
        (r[`/search/types?query=${encodeURIComponent(q)}${lang}`] as { post: string[] }).post.sort();
      for (const q of ['straße', 'strasse', 'STRAẞE']) {
        // The last word is a prefix: 'strasse' also starts 'Straßenbahn'.
        assert.deepEqual(posts(q), ['STRASSE bob', 'Straßenbahn fahren', 'straße anna'], q);
      }
      assert.deepEqual(posts('stras'), ['STRASSE bob', 'Straßenbahn fahren', 'straße anna']);
      assert.deepEqual(posts('straßenb', '&language=de'), ['Straßenbahn fahren']);
      assert.deepEqual(posts('GRÜSSE köln'), ['Grüße aus Köln']);
      for (const q of ['finance', 'ﬁnance']) assert.deepEqual(posts(q), ['finance talk', 'ﬁnance club'], q);
      assert.deepEqual(posts('full'), ['ｆｕｌｌ width']);
      assert.deepEqual(posts('istanbul'), ['İstanbul trip']);
      assert.deepEqual(posts('İSTANBUL'), ['İstanbul trip']);
      // Dotless ı is a letter of its own (Turkish), not an i without its dot.
      assert.deepEqual(posts('ıspanak'), ['ıspanak yemeği']);
      assert.deepEqual(posts('ispanak'), []);
      assert.deepEqual(posts('ÆBLE'), ['Æble pie']);
      for (const q of ['οδος', 'οδός']) assert.deepEqual(posts(q), ['ΟΔΟΣ μεγάλη'], q);
      assert.deepEqual(posts('한국어'), ['한국어 공부']);
      assert.deepEqual(posts('かっこう'), ['がっこう']);
    });
  }

  it('SQLite and PostgreSQL give identical answers to every query, with and without a language', (t) => {
    if (results.size < 2) {
      t.skip('needs TEST_PG_URL');
      return;
    }
    assert.deepEqual(results.get('postgres'), results.get('sqlite'));
  });
});
