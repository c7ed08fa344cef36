// The oldest and newest ids of the documents of some kinds, read from the ends of the kind index: the bounds every
// walk and count of a search is drawn within.
import { type RawBuilder, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { DOC_KINDS, type DocKind } from './search.repository.ts';
import { lastAnalyzedAt, type StatsFreshness } from './search-word-stats.repository.ts';

/**
 * The ids of the oldest and newest documents of these kinds (0 when none): the bounds of the ranking's recent
 * window. Index lookups only (search_docs_kind per kind, or the primary key's ends for every kind).
 */
export async function docIdRange(
  db: Db,
  dialect: Dialect,
  kinds: readonly DocKind[],
): Promise<{ first: number; last: number }> {
  return (await docIdRanges(db, dialect, [kinds])).ranges[0] as { first: number; last: number };
}

/**
 * The first (`asc`) or last (`desc`) id of one kind's documents, below `beforeId` when given, read from the end of
 * search_docs_kind's range for the kind. Written as a range (`between kind and kind`) ordered by (kind, id), not as
 * `max(id) where kind = $1`: on an equality PostgreSQL drops the kind from the order and may walk the primary key
 * from its end, testing each row's kind. Prepared, its generic plan did so for every kind (it guesses a sixth of the
 * documents per kind, spread evenly), while a world may hold its kinds in blocks of ids (the seeded one: users first,
 * then networks): 1.2-1.8 s per search where the index answers in 0.1 ms, and under load searches ran into the
 * statement timeout. With a range, only the index gives that order.
 */
function kindEnd(direction: 'asc' | 'desc', kind: DocKind, beforeId?: number): RawBuilder<unknown> {
  const dir = sql.raw(direction);
  const below = beforeId === undefined ? sql`` : sql`and id < ${beforeId}`;
  return sql`(select id from search_docs where kind between ${kind} and ${kind} ${below}
    order by kind ${dir}, id ${dir} limit 1)`;
}

/**
 * PostgreSQL: the first (`min`) or last (`max`) id of any of `kinds`, one probe of search_docs_kind's range per kind
 * as kindEnd, the kinds bound as one array. A union of one probe per kind cost 0.8 ms of planning on every search
 * (with ten probes and more for a signed-in caller, PostgreSQL kept planning a custom plan at each bind), against
 * 0.3 ms for this one loop, which also has one text, and so one prepared statement, for every set of kinds.
 */
function pgKindsEnd(fn: 'min' | 'max', kinds: readonly DocKind[], beforeId?: number): RawBuilder<unknown> {
  const dir = sql.raw(fn === 'min' ? 'asc' : 'desc');
  const below = beforeId === undefined ? sql`` : sql`and d.id < ${beforeId}`;
  return sql`(select ${sql.raw(fn)}(e.id) from unnest(${[...kinds]}::text[]) k(kind)
    cross join lateral (select d.id from search_docs d where d.kind between k.kind and k.kind ${below}
      order by d.kind ${dir}, d.id ${dir} limit 1) e)`;
}

/**
 * docIdRange of each set of kinds, in one statement: a signed-in search needs the range of the kinds other than
 * messages and that of every kind it searches, and on PostgreSQL each statement is a round trip. With `forRanking`
 * (PostgreSQL only) also the bound of the index of recent documents (undefined when there is none) and how fresh
 * the statistics of search_docs are (`stats`). `prepared: false` runs it unnamed, for a text one of many mixes of
 * sets may give (rankingDocIdRanges), which would use up the process's prepared statements (MAX_PREPARED).
 */
export async function docIdRanges(
  db: Db,
  dialect: Dialect,
  kindSets: readonly (readonly DocKind[])[],
  forRanking = false,
  prepared = true,
): Promise<{
  ranges: { first: number; last: number }[];
  recentIndex: number | undefined;
  stats?: StatsFreshness;
}> {
  // One min() or max() per statement: SQLite answers a lone min()/max() from the index's end, but scans every
  // entry for `select min(id), max(id)` (65 ms over 1,400,000 documents).
  const end = (fn: 'min' | 'max', kind?: DocKind) =>
    kind === undefined
      ? sql`(select ${sql.raw(fn)}(id) from search_docs)`
      : kindEnd(fn === 'min' ? 'asc' : 'desc', kind);
  const pick = (fn: 'min' | 'max', kinds: readonly DocKind[]) => {
    if (kinds.length >= DOC_KINDS.length) return end(fn);
    if (dialect === 'postgres' && kinds.length > 1) return pgKindsEnd(fn, kinds);
    const list = kinds.map((k) => end(fn, k));
    return list.length === 1
      ? (list[0] as RawBuilder<unknown>)
      : sql`(select ${sql.raw(fn)}(v) from (${sql.join(
          list.map((e) => sql`select ${e} as v`),
          sql` union all `,
        )}) k)`;
  };
  const columns = kindSets.map(
    (kinds, i) =>
      sql`${pick('min', kinds)} as ${sql.raw(`first${i}`)}, ${pick('max', kinds)} as ${sql.raw(`last${i}`)}`,
  );
  // PostgreSQL: the bound of the index of recent documents, read in the same statement (no row: no such index), and
  // when search_docs was last analyzed with the rows changed since (the server's activity statistics, from memory).
  if (forRanking) {
    columns.push(sql`(select bound from search_recent where id = 1) as recent_bound`);
    columns.push(sql`${lastAnalyzedAt()}::text as analyzed_at`);
    columns.push(sql`pg_stat_get_mod_since_analyze('search_docs'::regclass) as changed_since`);
  }
  // Prepared on PostgreSQL: the plan (each probe an index end) does not depend on the kinds bound.
  const r = await sql<
    Record<string, number | string | null>
  >`select ${prepared ? PREPARED : sql``} ${sql.join(columns)}`.execute(db);
  const row = r.rows[0] ?? {};
  const bound = row.recent_bound;
  return {
    ranges: kindSets.map((_, i) => ({
      first: Number(row[`first${i}`] ?? 0),
      last: Number(row[`last${i}`] ?? 0),
    })),
    recentIndex: bound === null || bound === undefined ? undefined : Number(bound),
    ...(forRanking
      ? {
          stats: {
            analyzedAt: typeof row.analyzed_at === 'string' ? row.analyzed_at : null,
            changedSince: Number(row.changed_since ?? 0),
          },
        }
      : {}),
  };
}

/**
 * Below `beforeId`, the newest id of a document of these kinds (`ofKinds`), and the newest of those or of a message
 * `viewer` sent or received (`withMine`; the same without a viewer); 0 when there is none. One index probe per kind
 * (search_docs_kind) and per side (the partial message indexes of migration 0011, PostgreSQL), so a run of documents
 * the walk would skip (a block of others' messages) costs no walk.
 */
export async function newestIdBelow(
  db: Db,
  dialect: Dialect,
  kinds: readonly DocKind[],
  viewer: string | null,
  beforeId: number,
): Promise<{ ofKinds: number; withMine: number }> {
  // PostgreSQL: the kinds as one loop (pgKindsEnd), whose generic plan is kept; a union of a probe per kind was
  // planned afresh at every bind, 0.7-2.7 ms, once for each chunk of a rare word's older walk.
  const ofKinds =
    dialect === 'postgres'
      ? pgKindsEnd('max', kinds, beforeId)
      : sql`(select max(v) from (${sql.join(
          kinds.map((k) => sql`select ${kindEnd('desc', k, beforeId)} as v`),
          sql` union all `,
        )}) k)`;
  const side = (column: 'owner_uuid' | 'recipient_uuid') =>
    sql`select (select max(id) from search_docs
      where kind = 'messages' and ${sql.ref(column)} = ${viewer} and id < ${beforeId}) as v`;
  const mine =
    viewer === null
      ? sql`null`
      : sql`(select max(v) from (${side('owner_uuid')} union all ${side('recipient_uuid')}) m)`;
  // Prepared on PostgreSQL, as docIdRange: index-end probes whose plan does not depend on the values bound.
  const r = await sql<{
    k: number | string | null;
    m: number | string | null;
  }>`select ${PREPARED} ${ofKinds} as k, ${mine} as m`.execute(db);
  const newest = Number(r.rows[0]?.k ?? 0);
  return { ofKinds: newest, withMine: Math.max(newest, Number(r.rows[0]?.m ?? 0)) };
}
