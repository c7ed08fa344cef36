import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { approxBytes, ExactCache } from '../../src/db/exact-cache.ts';

// The exact caches' byte budgets (SEARCH_CACHE_MB, READ_CACHE_MB): what an answer weighs and what is evicted.
// Exactness is the same with or without eviction, so HTTP answers cannot show it; the cache is tested directly.

/** A page of 20 tags with 100 association uuids each, as GET /tags answers it. */
function tagPage(seed: number) {
  return {
    data: Array.from({ length: 20 }, (_, i) => ({
      uuid: `0195f0c2-0000-7000-8000-${String(seed * 100 + i).padStart(12, '0')}`,
      name: `tag${i}`,
      associations: Array.from(
        { length: 100 },
        (_, j) => `0195f0c2-0000-7000-9000-${String(seed * 10_000 + i * 100 + j).padStart(12, '0')}`,
      ),
    })),
    count: { offset: 0, limit: 20, total: 1000 },
  };
}

describe('cache memory budget', () => {
  it('estimates text by its length, twice for text beyond Latin-1, and containers by their slots', () => {
    assert.equal(approxBytes('a'.repeat(1000)), 1016);
    assert.equal(approxBytes('é'.repeat(1000)), 1016, 'Latin-1 text is stored one byte per character');
    assert.equal(approxBytes('€'.repeat(1000)), 2016);
    assert.equal(approxBytes(42), 8);
    assert.equal(approxBytes(null), 8);
    assert.equal(approxBytes(['ab', 'cd']), 16 + 2 * 8 + 2 * 18);
    assert.equal(approxBytes({ a: 'ab', b: 1 }), 24 + 8 + 18 + 8 + 8);
    // A tag page holds 2,000 uuids of 36 characters: about 110 KB, not "21 items".
    const page = approxBytes(tagPage(1));
    assert.ok(page > 100_000 && page < 130_000, `a tag page weighs ${page} bytes`);
  });

  it('evicts the least recently used answers once their bytes pass the budget, whatever the item budget', async () => {
    const page = approxBytes(tagPage(0));
    // Room for three pages by bytes; by weight (21 per page) room for hundreds.
    const cache = new ExactCache<ReturnType<typeof tagPage>>(10_000, (p) => p.data.length + 1, page * 3.5);
    const computed: number[] = [];
    const get = (n: number) =>
      cache.get('v1', `page-${n}`, async () => {
        computed.push(n);
        return tagPage(n);
      });
    for (const n of [1, 2, 3]) await get(n);
    await get(1); // 1 is now the most recently used
    await get(4); // over the budget: 2, the least recently used, goes
    assert.equal(cache.size, 3);
    assert.ok(cache.bytes <= cache.maxBytes, `${cache.bytes} bytes held over a budget of ${cache.maxBytes}`);
    computed.length = 0;
    for (const n of [1, 3, 4, 2]) await get(n);
    assert.deepEqual(computed, [2], 'only the evicted answer is computed again');
  });

  it('keeps no answer larger than the whole budget, and still answers it', async () => {
    const cache = new ExactCache<string>(100, () => 1, 10_000);
    let computed = 0;
    const big = async () => {
      computed++;
      return 'x'.repeat(20_000);
    };
    assert.equal((await cache.get('v1', 'big', big)).length, 20_000);
    assert.equal((await cache.get('v1', 'big', big)).length, 20_000);
    assert.equal(computed, 2);
    assert.equal(cache.size, 0);
    assert.equal(cache.bytes, 0);
  });
});
