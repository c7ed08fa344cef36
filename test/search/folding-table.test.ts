import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { foldByNormalization, foldText, LATIN_FOLD_END } from '../../src/db/search-fold.ts';

// foldText folds a text of code units below LATIN_FOLD_END one code unit at a time from a table, every other text by
// its normalizations (src/db/search-fold.ts). Both must give the same text, or a word indexed one way would not be
// found the other way. Normalization joins a code unit only with its neighbours, so every pair is checked.
describe('search folding of Latin text', () => {
  it('folds every pair of code units below the table end as the normalizations do', () => {
    const differing: string[] = [];
    for (let a = 0; a < LATIN_FOLD_END; a++) {
      for (let b = 0; b < LATIN_FOLD_END; b++) {
        const text = String.fromCharCode(a, b);
        if (foldText(text) !== foldByNormalization(text)) differing.push(text);
      }
    }
    assert.deepEqual(differing, []);
  });

  it('folds texts of Latin letters, and texts with anything else, as the normalizations do', () => {
    const texts = [
      'Grüße aus Köln, STRASSE und Straße',
      'Ǆemal İstanbul ŉ ½ ¨a Æble œuvre ĳ ſ ª º µ',
      'café crème brûlée à la française',
      'e\u0301 combining acute after e',
      'ΟΔΟΣ μεγάλη ẞ ﬁnance ｆｕｌｌ',
      'plain ascii with CAPITALS 42',
      '',
    ];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let i = 0; i < 2000; i++) {
      let text = '';
      for (let j = next() % 12; j > 0; j--) text += String.fromCharCode(next() % (LATIN_FOLD_END + 64));
      texts.push(text);
    }
    for (const text of texts) assert.equal(foldText(text), foldByNormalization(text), JSON.stringify(text));
  });

  it('lower-cases, removes diacritics and spells ß as ss', () => {
    assert.equal(foldText('Grüße aus KÖLN'), 'grusse aus koln');
    assert.equal(foldText('already folded'), 'already folded');
  });
});
