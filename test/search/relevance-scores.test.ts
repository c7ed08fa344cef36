import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeTextStats, encodeTextStats, textStats } from '../../src/db/search-stats.ts';
import { NodeSqliteDatabase } from '../../src/db/sqlite-driver.ts';
import { queryTerms, relevanceScores } from '../../src/modules/search/search.query.ts';

// ASCII texts are scored in one pass over their characters, every other text through its folded words
// (src/db/search-stats.ts, fieldStats). A no-break space is not a word character on either path, so appending one sends a
// text down the general path without changing its words: both paths must then score it alike.
const NBSP = '\u00a0';

const TEXTS = [
  'Coffee in the morning, coffee at noon',
  'COFFEE-MORNING; coffees and mornings',
  'cof co c coffeemaker morn',
  'Morning 42 coffee42 MORNING42',
  '   ',
  '',
  'a title only',
  'The-the THE theme them th',
  'x'.repeat(300),
];

const QUERIES = ['coffee morning', 'coffee', 'morn', 'the', 'coffee42 42', 'th', 'x', 'them the', 'café'];

describe('relevance scores', () => {
  it('score an ASCII text as the general path scores it, whatever its case and separators', () => {
    const docs = TEXTS.flatMap((title) => TEXTS.map((body) => ({ title: title || null, body })));
    const general = docs.map((d) => ({
      title: d.title === null ? null : `${d.title}${NBSP}`,
      body: `${d.body}${NBSP}`,
    }));
    for (const query of QUERIES) {
      const terms = queryTerms(query);
      assert.deepEqual(relevanceScores(terms, docs), relevanceScores(terms, general), query);
    }
  });

  it("score alike from the text and from SQLite's search_stats of it", () => {
    // SQLite's walks send each ranked candidate's statistics instead of its text (walkColumns in the repository).
    const sqlite = new NodeSqliteDatabase({ path: ':memory:', synchronous: 'OFF' });
    try {
      const stmt = sqlite.raw.prepare('select search_stats(?, ?, ?) as stats');
      const docs = TEXTS.flatMap((title) =>
        [...TEXTS, 'Grüße aus Köln, café crème', 'ΟΔΟΣ μεγάλη straße'].map((body) => ({
          title: title || null,
          body,
        })),
      );
      for (const query of [...QUERIES, 'grusse koln', 'οδος']) {
        const terms = queryTerms(query);
        const computed = docs.map((d) => ({
          title: null,
          body: null,
          stats: (stmt.get(terms.join(' '), d.title, d.body) as { stats: string }).stats,
        }));
        assert.deepEqual(relevanceScores(terms, computed), relevanceScores(terms, docs), query);
      }
    } finally {
      sqlite.raw.close();
    }
  });

  it('count the words of each field and how much each term matches them', () => {
    const terms = ['coffee', 'morning'];
    assert.deepEqual(textStats(terms, 'Coffee-morning', 'coffees, COF co mornings; Morning tea'), {
      title: 2,
      body: 6,
      titleTf: [1, 1],
      bodyTf: [1, 1.5],
    });
    assert.deepEqual(textStats(terms, null, 'Grüße, café MORNING'), {
      title: 0,
      body: 3,
      titleTf: [0, 0],
      bodyTf: [0, 1],
    });
    assert.throws(() => decodeTextStats('2 6 2 2 2 3', 3), /for 2 terms scored with 3/);
    assert.throws(() => decodeTextStats('2 6 1.5 2', 1), /only whole numbers/);
  });

  it('encode the statistics as whole numbers and decode them as they were', () => {
    const stats = textStats(['coffee', 'morning', 'tea'], 'Coffee coffees', 'mornings, Morning TEA; teatime');
    assert.deepEqual(stats, { title: 2, body: 4, titleTf: [1.5, 0, 0], bodyTf: [0, 1.5, 1.5] });
    assert.equal(encodeTextStats(stats), '2 4 3 0 0 0 3 3');
    assert.deepEqual(decodeTextStats(encodeTextStats(stats), 3), stats);
  });

  it('count an exact word fully, a prefix or a word the term continues by half', () => {
    const [exact, longer, shorter, short, other] = relevanceScores(
      ['coffee'],
      [
        { title: null, body: 'Coffee' },
        { title: null, body: 'coffeemaker' },
        { title: null, body: 'cof' },
        { title: null, body: 'co' },
        { title: null, body: 'tea' },
      ],
    );
    assert.ok((exact as number) > (longer as number), 'an exact word above a longer one');
    assert.equal(longer, shorter, 'a longer word and a three-letter start count alike');
    assert.ok((shorter as number) > 0);
    assert.equal(short, 0, 'a start of two letters does not count');
    assert.equal(other, 0);
  });
});
