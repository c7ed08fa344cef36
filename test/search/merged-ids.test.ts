// A deep page with English stemming (two FTS5 tables) and a signed-in caller's deep walk read lists of ids from
// group_concat texts and merge them, each in the walk's order, into one without repeats (docs/search.md, "Deep
// pages"). The pages themselves are compared with the matches in scope through HTTP in deep-pages, restricted-apart
// and scope-tokens; this checks the reading and the merge alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergedIds, parsedIds } from '../../src/modules/search/search-walk.repository.ts';

/** The merge as a set, sorted: what mergedIds must equal. */
const expected = (lists: number[][], direction: 'asc' | 'desc') =>
  [...new Set(lists.flat())].sort((a, b) => (direction === 'asc' ? a - b : b - a));

describe('parsedIds', () => {
  it('reads the ids of a group_concat text, none from an empty one', () => {
    assert.deepEqual(parsedIds('1456148,1456100,7,0'), [1456148, 1456100, 7, 0]);
    assert.deepEqual(parsedIds(''), []);
    assert.deepEqual(parsedIds('42'), [42]);
  });

  it('refuses anything but digits and commas', () => {
    assert.throws(() => parsedIds('12,-3'), /holds "-"/);
    assert.throws(() => parsedIds('12,3.5'), /holds "\."/);
    // An id without a digit is no id: two commas in a row, or one at either end.
    assert.throws(() => parsedIds('12,,3'), /holds ","/);
    assert.throws(() => parsedIds('12,'), /holds ","/);
    assert.throws(() => parsedIds(',12'), /holds ","/);
  });
});

describe('mergedIds', () => {
  it('merges lists in a walk order, newest first or oldest first, an id in several lists once', () => {
    const plain = [90, 70, 50, 30, 10];
    const stemmed = [95, 70, 60, 30, 5];
    const checked = [99, 60, 1];
    assert.deepEqual(mergedIds([plain, stemmed], 'desc'), [95, 90, 70, 60, 50, 30, 10, 5]);
    assert.deepEqual(
      mergedIds([plain, stemmed, checked], 'desc'),
      expected([plain, stemmed, checked], 'desc'),
    );
    const asc = [plain, stemmed, checked].map((l) => [...l].reverse());
    assert.deepEqual(mergedIds(asc, 'asc'), expected(asc, 'asc'));
  });

  it('empty lists, one list, and lists that do not overlap', () => {
    assert.deepEqual(mergedIds([], 'desc'), []);
    assert.deepEqual(mergedIds([[], []], 'desc'), []);
    assert.deepEqual(mergedIds([[3, 2, 1]], 'desc'), [3, 2, 1]);
    assert.deepEqual(mergedIds([[9, 8], [], [2, 1]], 'desc'), [9, 8, 2, 1]);
    assert.deepEqual(
      mergedIds(
        [
          [1, 2],
          [8, 9],
        ],
        'asc',
      ),
      [1, 2, 8, 9],
    );
  });

  it('a list out of order or with repeats is sorted first', () => {
    assert.deepEqual(
      mergedIds(
        [
          [5, 9, 5, 1],
          [7, 3],
        ],
        'desc',
      ),
      [9, 7, 5, 3, 1],
    );
    assert.deepEqual(
      mergedIds(
        [
          [5, 9, 5, 1],
          [7, 3],
        ],
        'asc',
      ),
      [1, 3, 5, 7, 9],
    );
  });

  it('10,000 ids a list in random overlaps, as the deepest pages merge them', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed;
    };
    const list = () =>
      [...new Set(Array.from({ length: 10_000 }, () => random() % 40_000))].sort((a, b) => b - a);
    const lists = [list(), list(), list()];
    assert.deepEqual(mergedIds(lists, 'desc'), expected(lists, 'desc'));
  });
});
