// The bound a PostgreSQL search takes from the statistics of the index's words (docs/search.md, "Rare words by the
// statistics"): a query is read at once through GIN only when the statistics put its matches under the bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesAtMost } from '../../src/modules/search/search-word-stats.service.ts';

// 1,000 documents when analyzed: `love` in 30%, `coffee` in 5%; any lexeme not listed in at most 0.2% (2 documents).
const stats = {
  freqs: new Map([
    ['love', 0.3],
    ['coffee', 0.05],
  ]),
  minFreq: 0.002,
  rows: 1000,
};
const near = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 1e-6, `${actual}`);

describe('matchesAtMost', () => {
  it('bounds a listed word by its share and any other by the smallest share listed', () => {
    near(matchesAtMost({ terms: ['love', 'ab'] }, stats), 300);
    near(matchesAtMost({ terms: ['zymurgy', 'ab'] }, stats), 2);
  });

  it('bounds several words by the fewest of any one of them', () => {
    near(matchesAtMost({ terms: ['love', 'coffee', 'ab'] }, stats), 50);
    near(matchesAtMost({ terms: ['love', 'zymurgy', 'ab'] }, stats), 2);
  });

  it('sums the words an expanded last word stands for', () => {
    near(matchesAtMost({ terms: ['coffee'], prefixWords: ['coffee', 'coffees', 'coffeehouse'] }, stats), 54);
  });

  it('cannot bound a prefix no list of words stands for, nor a stemmed query', () => {
    assert.equal(matchesAtMost({ terms: ['lov'] }, stats), Number.POSITIVE_INFINITY);
    assert.equal(matchesAtMost({ terms: ['coffee'], prefixWords: [] }, stats), Number.POSITIVE_INFINITY);
    assert.equal(matchesAtMost({ terms: ['zymurgy', 'ab'], stem: 'en' }, stats), Number.POSITIVE_INFINITY);
    // The short prefix is left out; the whole word still bounds the query.
    near(matchesAtMost({ terms: ['coffee', 'lo'] }, stats), 50);
  });
});
