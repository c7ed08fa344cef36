import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuidv7 } from '../../src/db/time.ts';

// Every id the API hands out is a UUID version 7 (RFC 9562): time-ordered, so lists sorted by uuid follow creation,
// and drawn from a pooled random source (src/db/time.ts) that must never repeat a value across refills.
describe('uuidv7', () => {
  it('gives distinct, increasing version 7 ids across many refills of the random pool', () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7());
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids)
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const sorted = [...ids].sort();
    assert.deepEqual(sorted, ids);
    // The random tails differ: a pool served twice would repeat them.
    assert.equal(new Set(ids.map((id) => id.slice(19))).size, ids.length);
  });
});
