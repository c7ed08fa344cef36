import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { buildWorld, call, getFresh, type World } from './world.ts';

/** Result sets per query of the first engine, compared with the next engine's. */
const firstEngine = new Map<string, string[]>();

// biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
function contentKey(item: any): string {
  const text = item.body ?? item.username ?? item.name ?? item.title;
  return `${item.type}:${text}`;
}

const SAME_QUERIES = [
  '/search?query=zebra',
  '/search?query=run',
  '/search?query=running&language=en',
  '/search?query=runs&language=en',
  '/search?query=cafe',
  '/search?query=caf%C3%A9%20cr',
  '/search?query=zebra&language=de',
  '/search/users?query=jonh',
  '/search/users?query=alice%20wond',
  '/search/networks?query=zebar',
  '/search/hashtags?query=%23javscript',
  '/search/types?query=zebra',
  '/search/complete?query=jo',
];

for (const dialect of testDialects()) {
  describe(`search matching [${dialect.name}]`, () => {
    let t: TestApp;
    let w: World;
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const uuids = (items: any[]) => new Set(items.map((i) => i.uuid));
    const get = (url: string, token?: string) => t.inject({ method: 'GET', url, token: token ?? t.guest });

    before(async () => {
      t = await startTestApp(dialect);
      w = await buildWorld(t);
    });
    after(async () => t?.close());

    it('every term must match; the last one as a prefix', async () => {
      assert.deepEqual(
        [...uuids(await call(t, 'GET', '/search?query=zebra%20park', t.guest))],
        [w.ids.publicPost],
      );
      assert.deepEqual(
        [...uuids(await call(t, 'GET', '/search?query=zebra%20pa', t.guest))],
        [w.ids.publicPost],
      );
      assert.equal((await call(t, 'GET', '/search?query=zebra%20nothinghere', t.guest)).length, 0);
      // only the last term is a prefix
      assert.equal((await call(t, 'GET', '/search?query=pa%20zebra', t.guest)).length, 0);
      const users = await call(t, 'GET', '/search/users?query=alice%20wond', t.guest);
      assert.deepEqual([...uuids(users)], [w.alice.uuid]);
    });

    it('folds case and diacritics both ways', async () => {
      const cafe = await call(t, 'GET', '/search?query=cafe', t.guest);
      assert.ok(uuids(cafe).has(w.ids.publicPost));
      assert.ok(uuids(cafe).has(w.alice.uuid), 'the bio mentions Café');
      const accented = await call(t, 'GET', '/search?query=CAF%C3%89%20CR%C3%88', t.guest);
      assert.deepEqual([...uuids(accented)], [w.ids.publicPost]);
      const umlaut = await call(t, 'GET', '/search?query=lauft', t.guest);
      assert.deepEqual([...uuids(umlaut)], [w.ids.germanPost]);
    });

    it('language stems (running finds run) and limits content to that language', async () => {
      const running = await call(t, 'GET', '/search?query=running&language=en', t.guest);
      assert.ok(uuids(running).has(w.ids.runPost), 'running finds "I run every day"');
      assert.ok(uuids(running).has(w.ids.publicPost));
      const runs = await call(t, 'GET', '/search?query=runs&language=en', t.guest);
      assert.ok(uuids(runs).has(w.ids.publicPost), 'runs finds Running');
      const plain = await call(t, 'GET', '/search?query=runs', t.guest);
      assert.ok(!uuids(plain).has(w.ids.publicPost), 'no stemming without a language');
      const en = await call(t, 'GET', '/search?query=zebra&language=en&limit=100', t.guest);
      assert.ok(!uuids(en).has(w.ids.germanPost));
      assert.ok(uuids(en).has(w.ids.network), 'networks are not limited by language');
      const de = await call(t, 'GET', '/search?query=zebra&language=de&limit=100', t.guest);
      assert.deepEqual([...uuids(de)].sort(), [w.ids.germanPost, w.ids.network].sort());
      const bad = await get('/search?query=zebra&language=xx');
      assert.equal(bad.statusCode, 400);
    });

    it('language limits content only: users and hashtags are found in any language', async () => {
      // alice's bio and her English post both hold "Café"; with language=de the post goes, alice stays.
      const cafe = await call(t, 'GET', '/search?query=cafe&language=de&limit=100', t.guest);
      assert.ok(uuids(cafe).has(w.alice.uuid), 'a user is not limited by language');
      assert.ok(!uuids(cafe).has(w.ids.publicPost), 'English content is left out');
      const tags = await call(t, 'GET', '/search?query=%23java&language=de', t.guest);
      assert.deepEqual(
        tags.map((x: { name: string }) => x.name),
        ['javascript'],
      );
      const users = await call(t, 'GET', '/search/users?query=jo&language=de', t.guest);
      assert.ok(uuids(users).has(w.john.uuid));
      const typed = await get('/search/types?query=zebra&language=de');
      assert.equal(typed.statusCode, 200, typed.body);
      assert.deepEqual(JSON.parse(typed.body).count, { offset: 0, limit: 20, total: null });
    });

    it('forgives typos in user and network names when exact matches are few', async () => {
      const users = await call(t, 'GET', '/search/users?query=jonh', t.guest);
      assert.ok(uuids(users).has(w.john.uuid));
      const mixed = await call(t, 'GET', '/search?query=jonh', t.guest);
      assert.ok(uuids(mixed).has(w.john.uuid));
      const smiht = await call(t, 'GET', '/search/users?query=john%20smiht', t.guest);
      assert.ok(uuids(smiht).has(w.john.uuid));
      const short = await call(t, 'GET', '/search/users?query=jxn', t.guest);
      assert.equal(short.length, 0, 'three letters allow no typo');
      // Up to four words are matched with typos; a longer query is not (docs/search.md, Matching).
      const four = await call(t, 'GET', '/search/users?query=jonh%20smiht%20jonh%20smiht', t.guest);
      assert.ok(uuids(four).has(w.john.uuid));
      const five = await call(t, 'GET', '/search/users?query=jonh%20smiht%20jonh%20smiht%20jonh', t.guest);
      assert.equal(five.length, 0);
    });

    it('answers adversarial queries with 200 or 400, never 500', async () => {
      const queries = [
        '"',
        '""',
        '*',
        'zebra*',
        'NEAR(',
        'NEAR(a b)',
        'OR',
        'a OR b',
        'AND NOT',
        '&|!',
        "'",
        "zebra'",
        '#',
        '@',
        '##',
        '@@',
        '(',
        ')',
        ':*',
        'title:zebra',
        '{title}: x',
        '^zebra',
        '-zebra',
        '\\',
        '%',
        '_',
        '😀'.repeat(200),
        `zebra ${'a '.repeat(97)}`,
        'x'.repeat(200),
        '\u0000',
        'ẞ',
        '\u200b',
        '𞤀',
        'zebra 𞤀',
      ];
      const paths = [
        '/search',
        '/search/types',
        '/search/users',
        '/search/friends',
        '/search/hashtags',
        '/search/mentions',
        '/search/networks',
        '/search/complete',
      ];
      for (const q of queries) {
        for (const path of paths) {
          const res = await get(`${path}?query=${encodeURIComponent(q)}`, w.alice.token);
          assert.ok(
            [200, 400].includes(res.statusCode),
            `${path} ${JSON.stringify(q)}: ${res.statusCode} ${res.body}`,
          );
          assert.equal(body(res).status, res.statusCode === 200 ? 'OK' : 'ERROR');
        }
      }
      const emoji = await get(`/search?query=${encodeURIComponent('😀'.repeat(200))}`);
      assert.equal(emoji.statusCode, 200);
      assert.deepEqual(body(emoji).data, []);
      const tooLong = await get(`/search?query=${'x'.repeat(201)}`);
      assert.equal(tooLong.statusCode, 400);
      assert.equal(body(tooLong).error.code, 'invalid_request');
      // Every word must match, so a query with more words than count is refused, not cut.
      const words = (n: number) => encodeURIComponent(Array.from({ length: n }, (_, i) => `w${i}`).join(' '));
      for (const path of [
        '/search',
        '/search/types',
        '/search/users',
        '/search/networks',
        '/search/complete',
      ]) {
        assert.equal((await get(`${path}?query=${words(16)}`)).statusCode, 200, path);
        const many = await get(`${path}?query=${words(17)}`);
        assert.equal(many.statusCode, 400, `${path}: ${many.body}`);
        assert.equal(body(many).error.details[0].field, 'query');
        assert.match(body(many).error.message, /17 words; at most 16/);
      }
      for (const url of ['/search', '/search?query=', '/search?query=a&query=b', '/search?query=a&foo=1']) {
        assert.equal((await get(url)).statusCode, 400, url);
      }
    });

    it('accepts the order forms and rejects unknown ones naming the allowed values', async () => {
      for (const order of [
        'relevance',
        'relevance:desc',
        'created_at',
        'created_at:asc',
        'updated_at desc',
        'created_at asc',
      ]) {
        const res = await get(`/search?query=zebra&order=${encodeURIComponent(order)}`);
        assert.equal(res.statusCode, 200, order);
      }
      const asc = await call(t, 'GET', '/search?query=zebra&order=created_at:asc&limit=100', t.guest);
      const times = asc.map((i: { created_at: string }) => i.created_at);
      assert.deepEqual(times, [...times].sort());
      for (const order of ['username', 'karma:asc', 'username desc']) {
        const res = await get(`/search/users?query=jo&order=${encodeURIComponent(order)}`);
        assert.equal(res.statusCode, 200, order);
      }
      const byName = await call(t, 'GET', '/search/users?query=jo&order=username:desc', t.guest);
      assert.deepEqual(
        byName.map((u: { username: string }) => u.username),
        ['john_smith', 'johanna'],
      );
      // john earns karma by posting; johanna has none.
      await call(t, 'POST', '/posts', w.john.token, { body: 'karma earner qxv' });
      const byKarma = await getFresh(t, '/search/users?query=jo&order=karma:desc', t.guest);
      assert.deepEqual(
        byKarma.map((u: { username: string }) => u.username),
        ['john_smith', 'johanna'],
      );
      assert.ok(byKarma[0].karma > byKarma[1].karma, `${byKarma[0].karma} > ${byKarma[1].karma}`);
      const byKarmaAsc = await getFresh(t, '/search/users?query=jo&order=karma:asc', t.guest);
      assert.deepEqual(
        byKarmaAsc.map((u: { username: string }) => u.username),
        ['johanna', 'john_smith'],
      );
      const updated = await call(t, 'GET', '/search?query=zebra&order=updated_at:asc&limit=100', t.guest);
      assert.ok(updated.length > 3);
      // Media answers carry no updated_at (DESIGN); every other kind here does.
      const stamps = updated
        .filter((i: { type: string }) => i.type !== 'media')
        .map((i: { updated_at: string }) => i.updated_at);
      assert.ok(stamps.every((x: unknown) => typeof x === 'string'));
      assert.deepEqual(stamps, [...stamps].sort());
      for (const [path, order] of [
        ['/search', 'karma'],
        ['/search', 'random'],
        ['/search', 'created_at:up'],
        ['/search/users', 'email'],
        ['/search/networks', 'username'],
      ]) {
        const res = await get(`${path}?query=zebra&order=${encodeURIComponent(order as string)}`);
        assert.equal(res.statusCode, 400, `${path} ${order}`);
        assert.match(body(res).error.message, /relevance, created_at, updated_at/);
        assert.equal(body(res).error.details[0].field, 'order');
      }
    });

    it('validates paging: page or offset, limit up to the maximum, offset up to 10,000', async () => {
      assert.equal((await get('/search?query=zebra&page=2&offset=3')).statusCode, 400);
      assert.equal((await get('/search?query=zebra&offset=10001')).statusCode, 400);
      assert.equal((await get('/search?query=zebra&limit=101')).statusCode, 400);
      const far = await get('/search?query=zebra&offset=10000');
      assert.equal(far.statusCode, 200);
      assert.deepEqual(body(far).data, []);
      const paged = body(await get('/search?query=zebra&page=2&limit=2'));
      assert.deepEqual(paged.count, { offset: 2, limit: 2, total: null });
    });

    it('gives the same result sets on every engine', async () => {
      for (const url of SAME_QUERIES) {
        const res = body(await get(url, w.bob.token));
        const data = Array.isArray(res.data) ? res.data : Object.values(res.data).flat();
        const keys = data.map(contentKey).sort();
        assert.ok(keys.length > 0, `${url} finds something, so the engines are compared on results`);
        const first = firstEngine.get(url);
        if (first) assert.deepEqual(keys, first, url);
        else firstEngine.set(url, keys);
      }
    });
  });
}
