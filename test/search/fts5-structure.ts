import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { TestApp } from '../helper.ts';

/** One segment of an FTS5 table: its id, the level it is on and its leaf pages. */
export interface Fts5Segment {
  id: number;
  level: number;
  pages: number;
}

/** What FTS5's structure record of a table says: its levels, its leaf pages written so far and its segments. */
export interface Fts5Structure {
  levels: number;
  writes: number;
  segments: Fts5Segment[];
}

/** One record of an SQLite table's FTS5 `_data` table. */
async function dataRecord(t: TestApp, table: string, id: number): Promise<Uint8Array> {
  const { rows } = await sql<{ block: Uint8Array }>`select block from ${sql.table(`${table}_data`)}
    where id = ${id}`.execute(t.ctx.db);
  return rows[0]?.block ?? assert.fail(`no record ${id} in ${table}_data`);
}

/** A reader of a record's varints from `at` on (SQLite's: groups of 7 bits, most significant first, the ninth whole). */
function varints(block: Uint8Array, at: number): () => number {
  return () => {
    let value = 0;
    for (let i = 0; i < 9; i++) {
      const byte = block[at++] ?? assert.fail('a truncated FTS5 record');
      if (i === 8) return value * 256 + byte;
      value = value * 128 + (byte & 0x7f);
      if (byte < 0x80) return value;
    }
    return value;
  };
}

/**
 * Reads an SQLite table's FTS5 structure record (rowid 10 of its `_data` table, format 1): a 4-byte cookie, then
 * varints: levels, segments, leaf pages written, and per level the segments in a merge, their count and three numbers
 * per segment (id, first and last page).
 */
export async function fts5Structure(t: TestApp, table: string): Promise<Fts5Structure> {
  const block = await dataRecord(t, table, 10);
  assert.notEqual(block[4], 0xff, `${table}: a structure record of FTS5's second format`);
  const varint = varints(block, 4);
  const levels = varint();
  varint();
  const writes = varint();
  const segments: Fts5Segment[] = [];
  for (let level = 0; level < levels; level++) {
    varint();
    const count = varint();
    for (let i = 0; i < count; i++) {
      const id = varint();
      const first = varint();
      const last = varint();
      segments.push({ id, level, pages: last - first + 1 });
    }
  }
  return { levels, writes, segments };
}

/** The rows an SQLite table's FTS5 index counts as indexed: the first varint of its totals record (rowid 1). */
export async function fts5RowsIndexed(t: TestApp, table: string): Promise<number> {
  return varints(await dataRecord(t, table, 1), 0)();
}
