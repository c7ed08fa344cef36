import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractHashtags, extractMentions } from '../../src/modules/tag/extract.ts';
import { normalizeTagName } from '../../src/modules/tag/normalize.ts';

describe('tag name rules', () => {
  it('normalizes case, accents and compatibility forms alike', () => {
    for (const s of ['Café', 'cafe', 'CAFÉ', 'Cafe\u0301', 'ＣＡＦＥ'])
      assert.equal(normalizeTagName(s), 'cafe');
    assert.equal(normalizeTagName('Москва'), 'москва');
    assert.equal(normalizeTagName('日本語'), '日本語');
    // Full case folding, as search folds: the sharp s and the final sigma.
    for (const s of ['Straße', 'STRASSE', 'strasse', 'STRAẞE']) assert.equal(normalizeTagName(s), 'strasse');
    assert.equal(normalizeTagName('ΟΔΟΣ'), normalizeTagName('οδοσ'));
    assert.deepEqual(
      extractHashtags('#Straße #STRASSE #οδος #ΟΔΟΣ').map((h) => h.name),
      ['Straße', 'οδος'],
    );
  });

  it('finds hashtags at word starts in any script, not digits or underscores only, not in links', () => {
    const text =
      '#Café #cafe #日本語 #Москва #123 #1a x#no &#38; http://x.y/#frag https://a.b/c?d#e www.z.org/#w (#ok) #ok_2 #_ #___ #_1';
    assert.deepEqual(
      extractHashtags(text).map((h) => h.name),
      ['Café', '日本語', 'Москва', '1a', 'ok', 'ok_2', '_1'],
    );
    assert.equal(extractHashtags(`#${'a'.repeat(100)}`).length, 1);
    assert.equal(extractHashtags(`#${'a'.repeat(101)}`).length, 0);
  });

  it('finds mentions, not e-mail addresses or links', () => {
    assert.deepEqual(extractMentions('@Ann, @bob_2 and @ann; me@mail.org http://x.org/@carl'), [
      'Ann',
      'bob_2',
    ]);
  });
});
