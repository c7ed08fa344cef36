// Upkeep of the search index: FTS5 compaction and rebuild on SQLite, vacuum and the index of recent documents on
// PostgreSQL. Run by the CLI, the seed and the benchmark, never by a request.
import { setTimeout as sleep } from 'node:timers/promises';
import { type RawBuilder, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { DOC_TABLES, SQLITE_DOC_SOURCES } from '../../db/migrations/0002-search.ts';
import { LOCK_NOT_AVAILABLE } from '../../db/retrying-kysely.ts';
import { FLUSH_PENDING_SEARCH_DOCS } from '../../db/search-pending.ts';
import { DOC_KINDS, type DocKind, rowidValue } from './search.repository.ts';
import { docIdRange } from './search-ends.repository.ts';

/** The FTS5 tables of the index on SQLite. */
const FTS_TABLES = ['search_fts', 'search_fts_en', 'search_names_tri'] as const;

/**
 * An FTS5 command with a numeric value (`merge`, `usermerge`, `hashsize`) on one of FTS_TABLES, the value bound as an
 * INTEGER (rowidValue): FTS5 refuses the REAL node:sqlite binds for a plain number.
 */
function ftsCommand(table: (typeof FTS_TABLES)[number], name: string, value: number): RawBuilder<unknown> {
  return sql`insert into ${sql.table(table)}(${sql.ref(table)}, rank) values (${name}, ${rowidValue(value)})`;
}
/**
 * An FTS5 command without a value on one of FTS_TABLES: `rebuild` (the index from its content table, here emptied) or
 * `optimize` (its segments merged into one, on the next level when they share one, else two levels above the highest
 * the table has had).
 */
function ftsAction(table: (typeof FTS_TABLES)[number], name: 'rebuild' | 'optimize'): RawBuilder<unknown> {
  return sql`insert into ${sql.table(table)}(${sql.ref(table)}) values (${name})`;
}

/**
 * Leaf pages one merge step may write. Each step is a transaction of its own holding the write lock: 2,000 pages
 * held it up to 440 ms on the 1,000,000-post world, so 500 keep the API's writes waiting about 100 ms at most.
 */
export const MERGE_STEP_PAGES = 500;
/**
 * Most merge steps per table in one compaction. Each commit adds a segment, so under constant writes a step always
 * finds two to merge; the compaction stops here rather than chase them (merging the 1,000,000-post index into one
 * segment took 243 steps over the three tables).
 */
export const MAX_MERGE_STEPS = 2000;

/**
 * The bound of the index of recent documents as SQL text, in the index's predicate and in the walks that read it
 * alike: PostgreSQL drops a condition equal to a partial index's predicate, not one it merely implies. The bound is an
 * id the database gave (max(id), search_recent), never a request's value; anything but a whole number is refused.
 */
export function recentBoundLiteral(bound: number): string {
  if (!Number.isSafeInteger(bound))
    throw new Error(`the recent index's bound is not a whole number: ${bound}`);
  return String(bound);
}

/** The index of recent documents (PostgreSQL) and the name it is built under before it replaces the last one. */
const RECENT_INDEX = 'search_docs_recent_tsv';
const RECENT_INDEX_NEXT = 'search_docs_recent_next';
/**
 * How long `search compact` waits between tries: while another builds the index of recent documents, and between
 * rewindDocIds' tries for its lock.
 */
const LOCK_RETRY_MS = 100;

/**
 * Where the index of recent documents starts: a window (`span` ids) and a quarter of one below the newest document
 * other than a message. The quarter keeps a window whose kinds end a little lower (a `/search/types` column of a kind
 * whose newest document is older than the newest post) above the bound. Two windows, as first built, left half the
 * index below any window, and a search read and rejected those rows: `with` 19-23 ms for its window, 6-12 ms with
 * this bound (docs/search.md, "The index of recent documents (PostgreSQL)").
 */
export function recentIndexTarget(top: number, span: number): number {
  return top - span - Math.ceil(span / 4);
}

/**
 * PostgreSQL: builds the index of recent documents again when its bound lags `span` ids or more behind where it
 * belongs (recentIndexTarget; or builds it, when there is none); returns the bound in force afterwards (undefined:
 * none, the world being smaller than that). Between builds it grows with every new document, up to a window and a
 * quarter plus `span` below the newest (two to three windows before recentIndexTarget). A GIN index over `strip(tsv)`
 * of every document but messages with an id above the bound: the main index cannot answer `strip(tsv) @@ ...`, so a
 * search asks this one only when it chooses to, and messages are walked apart (docs/search.md, "The index of recent
 * documents (PostgreSQL)").
 *
 * Built concurrently under another name, so the API keeps reading and writing; the bound moves once it is valid
 * (searches bounded above the new bound may read either index), then the old index goes. A build cut short leaves the
 * other name behind, dropped by the next call. Not in a transaction: PostgreSQL builds concurrently only outside one.
 */
export async function refreshRecentIndex(db: Db, span: number): Promise<number | undefined> {
  return db.connection().execute(async (conn) => {
    // Two commands at once would build under the same name: the second waits, then finds the index fresh. It waits
    // between tries, not in a statement: a building index waits for every open transaction, a waiting lock's too.
    for (;;) {
      const got = await sql<{
        got: boolean;
      }>`select pg_try_advisory_lock(hashtext(${RECENT_INDEX})) as got`.execute(conn);
      if (got.rows[0]?.got) break;
      await sleep(LOCK_RETRY_MS);
    }
    try {
      return await refreshRecentIndexLocked(conn, span);
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${RECENT_INDEX}))`.execute(conn);
    }
  });
}

/** refreshRecentIndex's work, under its lock. */
async function refreshRecentIndexLocked(conn: Db, span: number): Promise<number | undefined> {
  const { last: top } = await docIdRange(
    conn,
    'postgres',
    DOC_KINDS.filter((k) => k !== 'messages'),
  );
  const state = await sql<{ bound: number | string | null; valid: boolean | null }>`
    select (select bound from search_recent where id = 1) as bound,
      (select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid
        where c.relname = ${RECENT_INDEX} and c.relnamespace = current_schema()::regnamespace) as valid`.execute(
    conn,
  );
  const row = state.rows[0];
  const current = row?.bound === null || row?.bound === undefined ? undefined : Number(row.bound);
  const target = recentIndexTarget(top, span);
  // Ids only grow, but for `search reindex`, which numbers the documents from 1 again (and forgets the bound), and
  // rewindDocIds, which gives deleted newest ids back: a bound left above the target is built again below.
  const fresh = row?.valid === true && current !== undefined && current <= target && target - current < span;
  if (target <= 0 || fresh) return current;
  await withoutStatementTimeout(conn, async () => {
    await sql`drop index concurrently if exists ${sql.id(RECENT_INDEX_NEXT)}`.execute(conn);
    // The bound is an integer this function computed from max(id), never a request's value; DDL takes no parameter.
    await sql
      .raw(
        `create index concurrently ${RECENT_INDEX_NEXT} on search_docs using gin (strip(tsv))
          where id > ${recentBoundLiteral(target)} and kind <> 'messages'`,
      )
      .execute(conn);
    await sql`insert into search_recent (id, bound) values (1, ${target})
      on conflict (id) do update set bound = excluded.bound`.execute(conn);
    await sql`drop index concurrently if exists ${sql.id(RECENT_INDEX)}`.execute(conn);
    await sql`alter index ${sql.id(RECENT_INDEX_NEXT)} rename to ${sql.id(RECENT_INDEX)}`.execute(conn);
  });
  return target;
}

/**
 * PostgreSQL's VACUUM of `tables` that also removes dead rows' index entries, however few (INDEX_CLEANUP ON; the
 * default skips the indexes under a threshold). `tables` is a constant list of table names, never a request's.
 */
export function vacuumWithIndexes(tables: string): string {
  return `vacuum (analyze, index_cleanup on) ${tables}`;
}

/** Runs `work` on one PostgreSQL connection without the API's statement timeout (index builds, vacuums). */
async function withoutStatementTimeout(conn: Db, work: () => Promise<void>): Promise<void> {
  await sql.raw('set statement_timeout = 0').execute(conn);
  try {
    await work();
  } finally {
    await sql.raw('reset statement_timeout').execute(conn);
  }
}

/**
 * Compacts the search index after writes and deletes (docs/search.md, "Keeping the index compact"). SQLite: merges
 * each FTS5 table's segments step by step into one until no step finds work (FTS5 reports work as two or more changes
 * counted on the connection) or MAX_MERGE_STEPS: the first step (a negative `merge`) puts every segment on one level
 * and starts merging it, the next ones continue that merge (`usermerge` 2 then lets a step merge any two segments of
 * a level). Segments the API commits meanwhile stay beside the merged one (merged with each other, two of a level at
 * a time), their deletion markers until the next compaction. PostgreSQL: gives the ids of deleted newest documents
 * back (rewindDocIds), moves the index of recent documents up (refreshRecentIndex, by `recentSpan` ids), then vacuums
 * and analyzes the index tables with their indexes' dead entries (vacuumWithIndexes), which also empties the GIN
 * pending list. Returns the merge steps taken (0 on PostgreSQL).
 */
export async function compactIndex(db: Db, dialect: Dialect, recentSpan: number): Promise<number> {
  if (dialect === 'postgres') {
    await rewindDocIds(db);
    await refreshRecentIndex(db, recentSpan);
    // On one connection, without the API's statement timeout: a million documents take longer than it allows.
    // INDEX_CLEANUP ON: by default a vacuum leaves the indexes alone while dead rows sit on under 2% of the table's
    // pages, and the GIN indexes kept every deleted document's entries, which searches read and recheck (the index
    // of recent documents held 14,890 of the benchmark's deleted posts: `mus` 24 ms instead of 10).
    await db.connection().execute((conn) =>
      withoutStatementTimeout(conn, async () => {
        await sql.raw(vacuumWithIndexes('search_docs, search_names')).execute(conn);
      }),
    );
    return 0;
  }
  let steps = 0;
  for (const table of FTS_TABLES) {
    await ftsCommand(table, 'usermerge', 2).execute(db);
    for (let worked = true, taken = 0; worked && taken < MAX_MERGE_STEPS; steps++, taken++) {
      worked = await db.transaction().execute(async (trx) => {
        const changes = async () =>
          Number((await sql<{ c: number }>`select total_changes() as c`.execute(trx)).rows[0]?.c ?? 0);
        const before = await changes();
        // A deletion marker goes only when its segment merges into the oldest: merging level by level kept one
        // segment per level, and the markers of deleted posts in all but the oldest, which every search of their
        // words read (after the benchmark's posts were deleted, `coffee morning` 7.0 ms against 4.7 merged into one).
        await ftsCommand(table, 'merge', taken === 0 ? -MERGE_STEP_PAGES : MERGE_STEP_PAGES).execute(trx);
        return (await changes()) - before >= 2;
      });
    }
  }
  return steps;
}

/** How long rewindDocIds waits for its lock at a time, and how many times it tries before leaving the ids alone. */
const REWIND_LOCK_MS = 200;
const REWIND_TRIES = 5;

/**
 * PostgreSQL: sets search_docs' id sequence back to just after the newest document, as SQLite numbers a new row (an
 * INTEGER PRIMARY KEY without AUTOINCREMENT takes the id after the newest). Otherwise the ids of deleted newest
 * documents stay a gap at the top of the index, and the ranking's recent window (the newest 30,000 ids) holds that
 * many fewer documents until newer ones fill it: after three benchmark runs removed their 27,536 posts, 25 posts on
 * top of the gap left 2,464 documents in the window, and `love` walked 57,000 older ids in id order (docs/search.md,
 * "Ids of deleted documents (PostgreSQL)"). The lock waits for the writes of search_docs in progress (an insert
 * holds it from before it takes its id until it commits) and holds new ones back for the moment it takes, so no id
 * is given twice; the sequence hands out one id at a time (bigserial's cache of 1). Writers queue behind a waiting
 * lock, so it waits REWIND_LOCK_MS at a time (behind a long transaction, a vacuum or an index build; RetryingKysely
 * runs each try up to three times), and after REWIND_TRIES the ids stay as they are until the next compaction: the
 * rewind only spares searches time.
 */
async function rewindDocIds(db: Db): Promise<void> {
  for (let tries = 0; tries < REWIND_TRIES; tries++) {
    try {
      await db.transaction().execute(async (trx) => {
        await sql.raw(`set local lock_timeout = '${REWIND_LOCK_MS}ms'`).execute(trx);
        await sql`lock table search_docs in share row exclusive mode`.execute(trx);
        await sql`select setval(pg_get_serial_sequence('search_docs', 'id'),
          coalesce((select max(id) from search_docs), 0) + 1, false)`.execute(trx);
      });
      return;
    } catch (err) {
      if ((err as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw err;
      await sleep(LOCK_RETRY_MS);
    }
  }
}

/**
 * Lifts of an FTS5 table's levels before a rebuild loads it (liftFtsLevels): after them the table has had 2 *
 * FTS_LIFTS levels, and the rebuild's final `optimize` leaves its one segment on level 2 * FTS_LIFTS + 1. FTS5 merges
 * a level's segments into the next level once it holds four, a step at a time, slowly when one of them is large; a
 * level that reaches sixteen segments is merged in one step, and a merge under way there is finished at once (its
 * crisis merge). A rebuild used to leave its one large segment on level 0 to 3; the API's commits, a small segment
 * each, climbed there within seconds of posts, and a crisis merge then rewrote that segment inside one COMMIT on the
 * event loop (2.0-2.9 s on the 1,000,000-post world; docs/search.md, "Keeping the index compact"). Each level's
 * segments are merged from four of the level below, so a commit's segment reaches level n only after about 4^n
 * commits; `search compact` merges them into the large one in its own process, in steps that each hold the write
 * lock about 100 ms at most (MERGE_STEP_PAGES).
 */
const FTS_LIFTS = 10;

/** The indexed columns of each FTS5 table (migration 0002's CREATE VIRTUAL TABLE), which its placeholders fill. */
const FTS_COLUMNS: Record<(typeof FTS_TABLES)[number], readonly string[]> = {
  search_fts: ['kind', 'title', 'body'],
  search_fts_en: ['kind', 'title', 'body'],
  search_names_tri: ['name_fold'],
};

/**
 * While each FTS5 table of the index is empty, raises its levels with FTS_LIFTS + 1 placeholder rows (rowids below
 * every document's), each followed by an `optimize`, then deletes them: the rebuild's final `optimize` merges
 * everything into one segment and drops the placeholders with their deletion markers. An `optimize` of segments on two
 * levels or more gathers them on a new level and merges that into the next, two above the highest the table had. The
 * first placeholder is wide (2,000 words): FTS5 moves a higher segment down to a new segment's level when it is no
 * larger (fts5StructurePromote), which kept one-word placeholders on level 1.
 */
async function liftFtsLevels(db: Db): Promise<void> {
  const wide = Array.from({ length: 2000 }, (_, i) => `lift${i}`).join(' ');
  for (const table of FTS_TABLES) {
    const placeholders: [number, string][] = [[-FTS_LIFTS - 1, wide]];
    for (let rowid = -FTS_LIFTS; rowid <= -1; rowid++) placeholders.push([rowid, 'lift']);
    for (const [rowid, text] of placeholders) {
      await placeholderRow(table, rowid, text, false).execute(db);
      await ftsAction(table, 'optimize').execute(db);
    }
    for (const [rowid, text] of placeholders) await placeholderRow(table, rowid, text, true).execute(db);
  }
}

/** A placeholder row of liftFtsLevels in one of FTS_TABLES, written or deleted: `text` in its last column. */
function placeholderRow(
  table: (typeof FTS_TABLES)[number],
  rowid: number,
  text: string,
  deleting: boolean,
): RawBuilder<unknown> {
  const columns = FTS_COLUMNS[table];
  const names = sql.join(columns.map((c) => sql.ref(c)));
  const values = sql.join(columns.map((_, i) => (i === columns.length - 1 ? text : '')));
  return deleting
    ? sql`insert into ${sql.table(table)}(${sql.ref(table)}, rowid, ${names})
        values ('delete', ${rowidValue(rowid)}, ${values})`
    : sql`insert into ${sql.table(table)}(rowid, ${names}) values (${rowidValue(rowid)}, ${values})`;
}

/**
 * The rebuild's final `optimize` of one of FTS_TABLES, leaving its one segment above the levels the API's commits
 * reach. An `optimize` puts its segment above the levels liftFtsLevels made only when the segments it merges lie on
 * two levels or more; when the load left them all on one, its segment lands on the next, and a placeholder written and
 * deleted beside it gives a second `optimize` the two levels (one more rewrite of the table). An empty table is left
 * as it is.
 */
async function optimizeAboveCommits(db: Db, table: (typeof FTS_TABLES)[number]): Promise<void> {
  await ftsAction(table, 'optimize').execute(db);
  const level = await highestSegmentLevel(db, table);
  if (level < 0 || level >= 2 * FTS_LIFTS) return;
  await placeholderRow(table, -1, 'lift', false).execute(db);
  await placeholderRow(table, -1, 'lift', true).execute(db);
  await ftsAction(table, 'optimize').execute(db);
}

/**
 * The highest level holding a segment of one of FTS_TABLES, read from FTS5's structure record (rowid 10 of its
 * `_data` table: a 4-byte cookie, then varints: levels, segments, the write counter, and per level the segments in a
 * merge, their count and three numbers per segment). -1 for an empty index or a format this does not read (FTS5's
 * second, written only by tables with `contentless_delete=1`).
 */
async function highestSegmentLevel(db: Db, table: (typeof FTS_TABLES)[number]): Promise<number> {
  const { rows } = await sql<{ block: Uint8Array }>`select block from ${sql.table(`${table}_data`)}
    where id = 10`.execute(db);
  const block = rows[0]?.block;
  if (!block || block.length < 5) return -1;
  if (block[4] === 0xff) return -1;
  const at = { offset: 4 };
  const levels = readVarint(block, at);
  readVarint(block, at);
  readVarint(block, at);
  let highest = -1;
  for (let level = 0; level < levels; level++) {
    readVarint(block, at);
    const segments = readVarint(block, at);
    for (let i = 0; i < 3 * segments; i++) readVarint(block, at);
    if (segments > 0) highest = level;
  }
  return highest;
}

/** Reads SQLite's varint (groups of 7 bits, most significant first, the ninth byte whole) at `at.offset`. */
function readVarint(block: Uint8Array, at: { offset: number }): number {
  let value = 0;
  for (let i = 0; i < 9; i++) {
    const byte = block[at.offset++] ?? 0;
    if (i === 8) return value * 256 + byte;
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) return value;
  }
  return value;
}

/** FTS5's own default for the terms a table holds in memory before it writes them as a segment (`hashsize`). */
const FTS5_DEFAULT_HASH_BYTES = 1024 * 1024;

/**
 * The terms a rebuild holds in memory per FTS5 table before writing a segment. At FTS5's 1 MiB the 1,000,000-post
 * world's terms became hundreds of small segments, merged again and again while the rebuild went on (automerge);
 * at 64 MiB `search_fts` alone was built from that world in 47-56 s instead of 67-71 (docs/decisions.md, thirty-first
 * session).
 */
const REBUILD_HASH_BYTES = 64 * 1024 * 1024;

/**
 * Sets `hashsize` on every FTS5 table of the index: a persistent setting, which the rebuild puts back to FTS5's default
 * (nothing else sets it).
 */
async function setFtsHashSize(db: Db, bytes: number): Promise<void> {
  for (const table of FTS_TABLES) await ftsCommand(table, 'hashsize', bytes).execute(db);
}

/**
 * Rebuilds the index from the base tables (recovery): documents inserted in creation order so "newest" stays
 * meaningful, names of users, networks and hashtags, and on SQLite the FTS5 structures from scratch, each table ending
 * as one segment above the levels the API's commits reach (liftFtsLevels, optimizeAboveCommits). Runs in the
 * caller's transaction (`db` is one): a failed rebuild must leave neither a half index nor a raised `hashsize`.
 */
export async function rebuildIndex(db: Db, dialect: Dialect): Promise<{ docs: number; names: number }> {
  const columns =
    'kind, uuid, owner_uuid, visibility, recipient_uuid, language, title, body, created_at, updated_at';
  const selects = (Object.keys(DOC_TABLES) as DocKind[]).map(
    (kind) => `select ${SQLITE_DOC_SOURCES[kind]('r')} from ${DOC_TABLES[kind]} r`,
  );
  const fold = (expr: string) =>
    dialect === 'postgres'
      ? `' ' || search_fold(${expr}) || ' '`
      : `' ' || replace(${expr}, '_', ' ') || ' '`;
  if (dialect === 'postgres') {
    // A rebuild of a large index outlasts the API's statement timeout; it holds the tables for its duration.
    await sql.raw('set local statement_timeout = 0').execute(db);
    await sql.raw('truncate search_docs, search_names restart identity').execute(db);
    // The ids start again from 1, below the bound of the index of recent documents: searches walk until `search
    // compact` builds it again.
    await sql.raw('delete from search_recent').execute(db);
  } else {
    await sql.raw('delete from search_names').execute(db);
    await sql.raw('delete from search_docs').execute(db);
  }
  if (dialect === 'sqlite') {
    // 'rebuild' after the deletes empties the FTS5 structures whatever state they were in.
    for (const table of FTS_TABLES) await ftsAction(table, 'rebuild').execute(db);
    await liftFtsLevels(db);
    await setFtsHashSize(db, REBUILD_HASH_BYTES);
  }
  await sql
    .raw(`insert into search_docs(${columns}) select * from (${selects.join(' union all ')}) s order by 9, 2`)
    .execute(db);
  await sql
    .raw(
      `insert into search_names(kind, uuid, name, name_fold)
       select kind, uuid, name, ${fold('name')} from (
         select 'user' as kind, uuid, username as name, created_at from users
         union all select 'user', uuid, display_name, created_at from users where display_name is not null and display_name <> ''
         union all select 'network', uuid, name, created_at from networks
         union all select 'hashtag', uuid, name_key, created_at from tags where tag_type = 'hashtag'
       ) s order by created_at`,
    )
    .execute(db);
  if (dialect === 'sqlite') {
    // On a group-committed connection the documents above only wait to be indexed: index them before optimizing.
    for (const statement of FLUSH_PENDING_SEARCH_DOCS) await sql.raw(statement).execute(db);
    for (const table of FTS_TABLES) await optimizeAboveCommits(db, table);
    await setFtsHashSize(db, FTS5_DEFAULT_HASH_BYTES);
  }
  const docs = await sql<{ n: number }>`select count(*) as n from search_docs`.execute(db);
  const names = await sql<{ n: number }>`select count(*) as n from search_names`.execute(db);
  return { docs: Number(docs.rows[0]?.n ?? 0), names: Number(names.rows[0]?.n ?? 0) };
}

/** A search document that differs from the item it indexes (findIndexMismatches). */
export interface IndexMismatch {
  kind: string;
  uuid: string;
  problem: string;
}

// What each kind's document must say of who may find it: [kind, the base table as `r` with joins, owner,
// visibility, recipient, language]. Written out here rather than taken from the triggers' sources, so the check is a
// second reading of the rule, not the same text compared with itself.
const INDEXED_AUDIENCES: [DocKind, string, string, string, string, string][] = [
  ['user', 'users r', 'r.uuid', "'public'", 'null', 'r.language'],
  ['network', 'networks r', 'r.user_uuid', "'public'", 'null', 'null'],
  ['post', 'posts r', 'r.user_uuid', 'r.visibility', 'null', 'r.language'],
  [
    'comment',
    'comments r left join posts p on p.uuid = r.post_uuid',
    'p.user_uuid',
    'p.visibility',
    'null',
    'r.language',
  ],
  ['media', 'media r', 'r.user_uuid', 'r.visibility', 'null', 'r.language'],
  ['messages', 'messages r', 'r.user_uuid', "'message'", 'r.recipient_uuid', 'r.language'],
];

/**
 * Up to `limit` items whose search document is missing or says another owner, visibility, recipient or language
 * than the item (what the index's privacy rests on), and documents left without their item. `search reindex`
 * repairs every one.
 */
export async function findIndexMismatches(db: Db, limit: number): Promise<IndexMismatch[]> {
  const differs = (a: string, b: string) => `coalesce(${a}, '') <> coalesce(${b}, '')`;
  const parts = INDEXED_AUDIENCES.flatMap(([kind, from, owner, visibility, recipient, language]) => [
    `select '${kind}' as kind, r.uuid,
       case when d.uuid is null then 'missing from the index'
         else 'indexed with another kind, owner, visibility, recipient or language' end as problem
     from ${from} left join search_docs d on d.uuid = r.uuid
     where d.uuid is null or d.kind <> '${kind}' or ${differs('d.owner_uuid', owner)}
       or ${differs('d.visibility', visibility)} or ${differs('d.recipient_uuid', recipient)}
       or ${differs('d.language', language)}`,
    `select d.kind, d.uuid, 'in the index without its item' as problem from search_docs d
     where d.kind = '${kind}' and not exists (select 1 from ${from.split(' ')[0]} x where x.uuid = d.uuid)`,
  ]);
  parts.push(`select d.kind, d.uuid, 'in the index under a kind no table has' as problem from search_docs d
    where d.kind not in (${INDEXED_AUDIENCES.map(([kind]) => `'${kind}'`).join(', ')})`);
  const r = await sql<IndexMismatch>`${sql.raw(parts.join(' union all '))} limit ${limit}`.execute(db);
  return r.rows;
}
