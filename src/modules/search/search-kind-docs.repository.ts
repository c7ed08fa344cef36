// How many documents of each kind the search index holds: which side of a kind filter FTS5 reads faster.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { DOC_KINDS, type DocKind } from './search.repository.ts';

/**
 * The documents of each kind in search_docs (0 for a kind without any), counted in the kind index without a row
 * (about 60 ms for 1,455,000 documents on SQLite).
 */
export async function countDocsByKind(db: Db): Promise<Map<DocKind, number>> {
  const r = await sql<{ kind: string; n: number | string }>`
    select kind, count(*) as n from search_docs group by kind`.execute(db);
  const counts = new Map<DocKind, number>(DOC_KINDS.map((k) => [k, 0]));
  for (const row of r.rows) {
    if ((DOC_KINDS as readonly string[]).includes(row.kind)) counts.set(row.kind as DocKind, Number(row.n));
  }
  return counts;
}
