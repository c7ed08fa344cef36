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

/**
 * Reads an SQLite table's FTS5 structure record (rowid 10 of its `_data` table, format 1): a 4-byte cookie, then
 * varints: levels, segments, leaf pages written, and per level the segments in a merge, their count and three numbers
 * per segment (id, first and last page).
 */
export async function fts5Structure(t: TestApp, table: string): Promise<Fts5Structure> {
  const { rows } = await sql<{ block: Uint8Array }>`select block from ${sql.table(`${table}_data`)}
    where id = 10`.execute(t.ctx.db);
  const block = rows[0]?.block ?? assert.fail(`no structure record in ${table}_data`);
  assert.notEqual(block[4], 0xff, `${table}: a structure record of FTS5's second format`);
  let at = 4;
  // SQLite's varint: groups of 7 bits, most significant first, the ninth byte whole.
  const varint = () => {
    let value = 0;
    for (let i = 0; i < 9; i++) {
      const byte = block[at++] ?? assert.fail(`${table}: a truncated structure record`);
      if (i === 8) return value * 256 + byte;
      value = value * 128 + (byte & 0x7f);
      if (byte < 0x80) return value;
    }
    return value;
  };
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
