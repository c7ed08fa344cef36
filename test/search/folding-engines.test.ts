import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { foldForIndex } from '../../src/db/search-fold.ts';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';

// Each engine's search_fold() (JavaScript on SQLite, SQL on PostgreSQL, with a shortcut for ASCII text since migration
// 0029) must fold indexed text exactly as the query side does (foldForIndex), or a word would be stored under one
// spelling and looked up under another. Every ASCII code unit is checked alone and between letters, then mixed
// texts.
function texts(): string[] {
  const out = [
    '',
    'plain',
    'Hello, WORLD!! 42_x',
    "C3PO's v2.0 -- ok?",
    '  lead and trail  ',
    'TAB\there\nnew',
  ];
  for (let c = 1; c < 128; c++) {
    const ch = String.fromCharCode(c);
    out.push(ch, `a${ch}B`, `${ch}${ch}Z${ch}`);
  }
  out.push('Grüße aus Köln', 'ﬁnance', 'ΟΔΟΣ', 'İstanbul', 'e\u0301te', 'straße', 'ascii then é', 'がっこう');
  let seed = 11;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed;
  };
  const alphabet = 'aZ0 _-.,!?ßéÉ\u0301ΣςİıﬁＡ';
  for (let i = 0; i < 500; i++) {
    let text = '';
    for (let j = next() % 10; j > 0; j--) {
      text += next() % 3 === 0 ? alphabet[next() % alphabet.length] : String.fromCharCode(1 + (next() % 127));
    }
    out.push(text);
  }
  return out;
}

for (const dialect of testDialects()) {
  describe(`search folding: the database folds as the query does [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t.close());

    it('folds every ASCII code unit, and mixed texts, as foldForIndex does', async () => {
      const differing: string[] = [];
      for (const text of texts()) {
        const r = await sql<{ f: string }>`select search_fold(${text}) as f`.execute(t.ctx.db);
        if (r.rows[0]?.f !== foldForIndex(text)) differing.push(JSON.stringify(text));
      }
      assert.deepEqual(differing, []);
    });
  });
}
