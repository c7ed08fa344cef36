import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { ExactCache } from '../../src/db/exact-cache.ts';
import { injectWithToken, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { buildWorld, call, type World } from './world.ts';

// The answer cache is exact (docs/search.md, "Speed"): an answer is reused only while nothing was written since, by
// this process or any other, and it is kept per viewer. These searches repeat a query around writes and expect
// exactly what an uncached search gives.
for (const dialect of testDialects()) {
  describe(`search answer cache [${dialect.name}]`, () => {
    let t: TestApp;
    let w: World;
    const bodies = async (query: string, token: string) =>
      (await call(t, 'GET', `/search?query=${encodeURIComponent(query)}`, token))
        .map((i: { body?: string }) => i.body)
        .sort();

    before(async () => {
      assert.ok(loadConfig({}, {}).SEARCH_CACHE_ITEMS > 0, 'the cache is on by default');
      t = await startTestApp(dialect);
      w = await buildWorld(t);
    });
    after(async () => t?.close());

    it('a write is seen by the very next search of the same query', async () => {
      assert.deepEqual(await bodies('kumquat', t.guest), []);
      assert.deepEqual(await bodies('kumquat', t.guest), []);
      await call(t, 'POST', '/posts', w.alice.token, { body: 'kumquat pie' });
      assert.deepEqual(await bodies('kumquat', t.guest), ['kumquat pie']);
      await call(t, 'POST', '/posts', w.carol.token, { body: 'kumquat jam' });
      assert.deepEqual(await bodies('kumquat', t.guest), ['kumquat jam', 'kumquat pie']);
    });

    it('an item made private disappears at once from answers given before', async () => {
      const post = await call(t, 'POST', '/posts', w.alice.token, {
        body: 'persimmon tart',
        visibility: 'friends',
      });
      assert.deepEqual(await bodies('persimmon', w.bob.token), ['persimmon tart']);
      assert.deepEqual(await bodies('persimmon', w.carol.token), []);
      await call(t, 'POST', `/posts/${post.uuid}/update`, w.alice.token, { visibility: 'private' });
      assert.deepEqual(await bodies('persimmon', w.bob.token), []);
      assert.deepEqual(await bodies('persimmon', w.alice.token), ['persimmon tart']);
    });

    it("one viewer's answer is never given to another", async () => {
      await call(t, 'POST', '/posts', w.alice.token, { body: 'lychee secret', visibility: 'private' });
      assert.deepEqual(await bodies('lychee', w.alice.token), ['lychee secret']);
      assert.deepEqual(await bodies('lychee', t.guest), []);
      assert.deepEqual(await bodies('lychee', w.bob.token), []);
      const types = await call(t, 'GET', '/search/types?query=lychee', w.carol.token);
      assert.equal(types.post.length, 0);
    });

    it('a write by another process on the same database is seen at once', async () => {
      // A second app on its own connection(s) to the same database: what WORKERS=2 runs.
      const config = loadConfig({}, { DATABASE_URL: t.url, LOG_LEVEL: 'silent' });
      const handle = connectDatabase(t.url, { synchronous: 'NORMAL', poolSize: 2, readers: 0 });
      const other = await buildApp(config, { handle, skipMigrations: true, logger: false });
      try {
        assert.deepEqual(await bodies('tamarind', t.guest), []);
        const res = await injectWithToken(other.app, {
          method: 'POST',
          url: '/posts',
          token: w.carol.token,
          payload: { body: 'tamarind sauce' },
        });
        assert.equal(res.statusCode, 201, res.body);
        assert.deepEqual(await bodies('tamarind', t.guest), ['tamarind sauce']);
      } finally {
        await other.app.close();
        await handle.db.destroy();
      }
    });

    it('answers the same with the cache off and with Cache-Control: no-cache', async () => {
      const queries = ['zebra', 'kumquat', 'persimmon', 'lychee', 'zeb'];
      const cached = [];
      for (const q of queries) cached.push(await bodies(q, w.alice.token));
      for (const [i, q] of queries.entries()) {
        const res = await injectWithToken(t.app, {
          method: 'GET',
          url: `/search?query=${q}`,
          token: w.alice.token,
          headers: { 'cache-control': 'no-cache' },
        });
        assert.equal(res.statusCode, 200, res.body);
        const fresh = res
          .json()
          .data.map((item: { body?: string }) => item.body)
          .sort();
        assert.deepEqual(fresh, cached[i], q);
      }
      // SEARCH_CACHE_ITEMS=0: a second app on the same database without any cache.
      const config = loadConfig({ SEARCH_CACHE_ITEMS: '0' }, { DATABASE_URL: t.url, LOG_LEVEL: 'silent' });
      assert.equal(config.SEARCH_CACHE_ITEMS, 0);
      const handle = connectDatabase(t.url, { synchronous: 'NORMAL', poolSize: 2, readers: 0 });
      const other = await buildApp(config, { handle, skipMigrations: true, logger: false });
      try {
        for (const [i, q] of queries.entries()) {
          const res = await injectWithToken(other.app, {
            method: 'GET',
            url: `/search?query=${q}`,
            token: w.alice.token,
          });
          assert.equal(res.statusCode, 200, res.body);
          assert.deepEqual(
            res
              .json()
              .data.map((item: { body?: string }) => item.body)
              .sort(),
            cached[i],
            q,
          );
        }
      } finally {
        await other.app.close();
        await handle.db.destroy();
      }
    });
  });
}

describe('ExactCache', () => {
  it('computes identical concurrent requests once and reuses the answer while the version holds', async () => {
    const cache = new ExactCache<number[]>(100, (v) => v.length);
    let computed = 0;
    const compute = async () => {
      computed++;
      await new Promise((r) => setTimeout(r, 5));
      return [1, 2, 3];
    };
    const answers = await Promise.all(Array.from({ length: 10 }, () => cache.get('v1', 'k', compute)));
    assert.equal(computed, 1);
    assert.ok(answers.every((a) => a === answers[0]));
    await cache.get('v1', 'k', compute);
    assert.equal(computed, 1);
    await cache.get('v2', 'k', compute);
    assert.equal(computed, 2, 'a new version computes again');
    assert.equal(cache.size, 1, 'answers of the old version are gone');
  });

  it('keeps at most its weight, dropping the least recently used answers', async () => {
    const cache = new ExactCache<number[]>(10, (v) => v.length);
    const four = async () => [1, 2, 3, 4];
    await cache.get('v', 'a', four);
    await cache.get('v', 'b', four);
    await cache.get('v', 'a', four);
    await cache.get('v', 'c', four);
    assert.equal(cache.size, 2);
    let recomputed = false;
    await cache.get('v', 'a', async () => {
      recomputed = true;
      return [1];
    });
    assert.equal(recomputed, false, 'a was used recently and stayed');
    await cache.get('v', 'big', async () => Array.from({ length: 11 }, () => 0));
    assert.equal(cache.size, 2, 'an answer heavier than the whole cache is not kept');
  });

  it('does not keep an answer computed under a version that changed meanwhile', async () => {
    const cache = new ExactCache<number[]>(100, (v) => v.length);
    let release: () => void = () => {};
    const slow = cache.get('v1', 'k', () => new Promise<number[]>((r) => (release = () => r([1]))));
    await cache.get('v2', 'other', async () => [2]);
    release();
    await slow;
    let computed = false;
    await cache.get('v2', 'k', async () => {
      computed = true;
      return [1];
    });
    assert.equal(computed, true);
  });
});
