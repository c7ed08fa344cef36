import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_BATCH_KEYS, TurnBatchedReads } from '../../src/db/turn-batch.ts';

// How reads of one event-loop turn are grouped into statements is invisible in HTTP answers (each answer is the
// same either way; test/karma/routes.test.ts checks those on both engines), so the grouping is tested directly.

/** A batched reader over a fixed map, recording the keys of every load. */
function reader(values: Record<string, number>, fail?: (keys: string[]) => boolean) {
  const loads: string[][] = [];
  const reads = new TurnBatchedReads<number>(async (keys) => {
    loads.push(keys);
    if (fail?.(keys)) throw new Error('database unreachable');
    return new Map(keys.filter((k) => k in values).map((k) => [k, values[k] as number]));
  });
  return { loads, reads };
}

describe('reads batched per event-loop turn', () => {
  it('reads asked in one turn go as one load, each answered with its own value or undefined', async () => {
    const { loads, reads } = reader({ a: 1, b: 2 });
    const answers = await Promise.all([reads.get('a'), reads.get('b'), reads.get('a'), reads.get('zz')]);
    assert.deepEqual(answers, [1, 2, 1, undefined]);
    assert.deepEqual(loads, [['a', 'b', 'zz']], 'one load, each key once');
  });

  it('a read asked after its turn goes in a later load, never into one already sent', async () => {
    const { loads, reads } = reader({ a: 1, b: 2 });
    const first = reads.get('a');
    await new Promise((resolve) => setImmediate(resolve));
    const second = reads.get('b');
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.deepEqual(loads, [['a'], ['b']]);
  });

  it('a turn asking for more keys than one statement takes sends several loads', async () => {
    const values = Object.fromEntries(Array.from({ length: MAX_BATCH_KEYS + 3 }, (_, i) => [`k${i}`, i]));
    const { loads, reads } = reader(values);
    const answers = await Promise.all(Object.keys(values).map((k) => reads.get(k)));
    assert.deepEqual(answers, Object.values(values));
    assert.deepEqual(
      loads.map((l) => l.length),
      [MAX_BATCH_KEYS, 3],
    );
  });

  it('a failed load fails each of its reads, and the next turn loads again', async () => {
    const { loads, reads } = reader({ a: 1, b: 2 }, (keys) => keys.includes('a'));
    const failed = await Promise.allSettled([reads.get('a'), reads.get('b')]);
    assert.deepEqual(
      failed.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(await reads.get('b'), 2);
    assert.deepEqual(loads, [['a', 'b'], ['b']]);
  });

  it('a load that throws before returning a promise fails its reads, not the process', async () => {
    let calls = 0;
    const reads = new TurnBatchedReads<number>((keys) => {
      calls++;
      if (calls === 1) throw new Error('no connection');
      return Promise.resolve(new Map(keys.map((k) => [k, 7])));
    });
    await assert.rejects(reads.get('a'), /no connection/);
    assert.equal(await reads.get('a'), 7);
  });
});
