// Walks over the matches of a query in index order, on both engines: the one read every search page comes from
// (findMatchesById). PostgreSQL's plans for a walk (id order, GIN, the index of recent documents, the viewer's
// messages apart) are chosen here from what the caller knows of the query's density.
import { type RawBuilder, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { KIND_GIN_KINDS } from '../../db/migrations/0014-search-kind-gin.ts';
import { restrictedVisibility } from '../../db/migrations/0031-search-restricted-index.ts';
import { PREVIEW_GIN_KINDS } from '../../db/migrations/0035-search-media-gin.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { readWholeNumbers } from '../../db/whole-numbers.ts';
import { visibleTo } from '../connection/visibility.ts';
import { type FtsKinds, partyToken } from './search.query.ts';
import {
  type Candidate,
  type CandidateRow,
  contentLanguage,
  type DocKind,
  ftsDecidesAllButRestricted,
  ftsHoldsScope,
  ftsKinds,
  ftsTables,
  idBounds,
  type Match,
  matchText,
  onlyMessages,
  restrictedMatchText,
  rowidValue,
  type Scope,
  scopeCondition,
  toCandidate,
  tsquery,
  walkColumns,
} from './search.repository.ts';
import { docIdRange } from './search-ends.repository.ts';
import { recentBoundLiteral } from './search-index.repository.ts';

/** A walk over matches in index order (the order documents were indexed in, which is their creation order). */
export interface IdWalk {
  direction: 'asc' | 'desc';
  /** Only documents with an id below this (e.g. the unranked tail after the ranked candidates). */
  beforeId?: number | undefined;
  /** Only documents with an id above this (e.g. the recent window of the ranking). */
  afterId?: number | undefined;
  /**
   * PostgreSQL plan hint for a descending walk: the ids above this are asked for first, in a query of their own,
   * and the older ones only if that does not fill the window (see findMatchesById). Ignored on SQLite.
   */
  walkAbove?: number | undefined;
  /**
   * PostgreSQL: walk the ids in order whatever the planner estimates (for a range the caller bounded, where the
   * query is known not to be rare). Its estimate for several common words assumes they are independent and picks
   * the GIN index, which then intersects their whole posting lists: 560 ms for "the and of to" over 290,000
   * documents, where walking 30,000 recent ids takes 20 ms at most. Ignored on SQLite.
   */
  forceWalk?: boolean | undefined;
  /**
   * PostgreSQL: find every match of the range through the kind's own GIN index first (KIND_GIN_KINDS, or
   * PREVIEW_GIN_KINDS), then sort them by id, for a single-kind walk the caller found sparse: the planner would walk
   * ids backwards to its LIMIT, crossing every other kind's documents on the way (docs/search.md, "Rare words in one
   * kind on PostgreSQL"). Ignored elsewhere, and when forceWalk is set.
   */
  ginFirst?: boolean | undefined;
  /**
   * Also read title and body (the ranked candidates need them; on SQLite their statistics for the match's terms
   * instead, see walkColumns). Rows that are only paged through or skipped leave them out: the text is most of a
   * row's bytes, and PostgreSQL computes the select list of every skipped row too.
   */
  withText?: boolean | undefined;
  /**
   * PostgreSQL, a signed-in walk of messages with other kinds: the ids of the oldest and newest document of the
   * kinds other than messages, when the caller knows them (spares a lookup per walk; see pgMessagesApart), or the
   * newest below a chunk of the older walk, so their walk does not cross a block of messages above it.
   */
  otherKinds?: { first: number; last: number } | undefined;
  /**
   * PostgreSQL: the share of the documents the statistics found holding the words the query's last word starts as a
   * prefix (prefixEntryShare), when the caller read it: about the entries per document the index of words and parties
   * reads in full. A signed-in walk of messages where it reaches `denseShare` walks up to `denseFewMessages` of the
   * viewer's messages through their sides (fewMessagesOf). It chooses the plan, never the rows.
   */
  prefixShare?: number | undefined;
  /**
   * PostgreSQL, a deep page whose first range is walked in id order (forceWalk, sized to hold the page by
   * deepWalkSplit): that range is read forwards, every match of it, then ordered. Backwards, each heap block is a read
   * of its own, which the OS does not prefetch: the comments of 87,000 ids for `par` took 526 ms from disk, 95 ms
   * forwards. Warm, forwards costs more (51 against 31 ms: every match of the range is read and sorted, not only
   * those up to the limit), which a range sized to the page keeps small. Ignored elsewhere.
   */
  forward?: boolean | undefined;
  /**
   * PostgreSQL, a forced walk of the recent window: the bound of the index of recent documents
   * (`search_docs_recent_tsv`, every document with an id above it), which the caller found cheaper to read than the
   * window's rows in id order. Used only when the whole range lies above the bound; otherwise the walk goes as
   * without it.
   */
  recentIndex?: number | undefined;
  offset: number;
  limit: number;
}

/**
 * One PostgreSQL query of a walk; the planner picks the GIN index (few matches: read them all, sort) or an id-ordered
 * index (many: stop at the limit). The callers bound the ids from both sides where they can, so an id-ordered walk
 * never crosses a long run of other documents (e.g. every post before the newest user, for a user search).
 */
async function pgWalk(
  db: Db,
  match: Match,
  scope: Scope,
  walk: PgWalkRange,
  offset: number,
  limit: number,
): Promise<Candidate[]> {
  const r =
    await sql<CandidateRow>`${pgWalkQuery(match, scope, walk)} limit ${limit} offset ${offset}`.execute(db);
  return r.rows.map(toCandidate);
}

/** The id range and plan of one PostgreSQL walk query. */
export interface PgWalkRange {
  direction: 'asc' | 'desc';
  beforeId?: number | undefined;
  afterId?: number | undefined;
  forceWalk?: boolean | undefined;
  ginFirst?: boolean | undefined;
  withText?: boolean | undefined;
  /** With forceWalk: read every match of the bounded range in ascending id order, then order them (IdWalk.forward). */
  forward?: boolean | undefined;
  /** With forceWalk: the bound of the index of recent documents (IdWalk.recentIndex). */
  recentIndex?: number | undefined;
  /**
   * A signed-in walk of messages alone: the viewer's messages in the range through the partial indexes of their two
   * sides, each tested against the words, rather than the index of words and parties. For ranges known to hold few
   * of them (fewMessagesOf, or a density sample's few thousand ids). Ignored for other scopes.
   */
  partyWalk?: boolean | undefined;
}

/**
 * PostgreSQL: the tsquery of a user as a party of a message (partyToken, as search_message_parties writes it; migration
 * 0028), bound as a parameter. A user's uuid is hexadecimal with dashes, so the token is one plain lexeme; anything
 * else is refused rather than read as tsquery syntax.
 */
function partyQuery(userUuid: string): RawBuilder<unknown> {
  const token = partyToken(userUuid);
  if (!/^u[0-9a-f]+$/.test(token)) throw new Error('a message party is not a uuid');
  return sql`${token}::tsquery`;
}

/** The matches in scope of a PostgreSQL walk in id order, without its window (the caller's LIMIT ends it). */
export function pgWalkQuery(match: Match, scope: Scope, walk: PgWalkRange): RawBuilder<unknown> {
  const bounds = idBounds(sql.ref('d.id'), walk);
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  if (scope.viewer !== null && onlyMessages(scope)) {
    // Only the viewer's two sides see a message. Few of theirs in the range (partyWalk): read through the partial
    // index of each side (migration 0011) and each tested against the words, since the index of words and parties
    // reads every message of the words and of the viewer whatever the range (`the` as bench_user: 537 messages for
    // the 7 of the recent window, 7.8 ms against 0.2 this way, EXPLAIN ANALYZE). Many: the words and the viewer as a
    // party are intersected in that index (migration 0028), then the matches are sorted; walking each side tested
    // every message's tsvector (`love` as bench_user, unbounded: 1,187 received messages for 19 matches, 3.7 ms
    // against 0.7; docs/search.md, "Messages by words and party (PostgreSQL)"). The scope stays as the check of who
    // sees a match. The party tokens have no positions, so PostgreSQL matches them whatever weight the query asks: a
    // last word starting the viewer's token (`u01a`) matched every message of theirs. ts_match_vq() checks the words
    // against the message's own lexemes, as every other walk and count does.
    const words = tsquery(match);
    const parties = sql`(d.tsv || search_message_parties(d.owner_uuid, d.recipient_uuid))`;
    const theirs = walk.partyWalk
      ? sql`(d.owner_uuid = ${scope.viewer} or d.recipient_uuid = ${scope.viewer})`
      : sql`${parties} @@ (${words} && ${partyQuery(scope.viewer)})`;
    return sql`
      select ${walkColumns(walk.withText)} from search_docs d
      where d.kind = 'messages' and ${theirs}
        and ts_match_vq(d.tsv, ${words})
        ${bounds} and ${scopeCondition(scope)}
      order by d.id ${dir}`;
  }
  if (walk.forceWalk && inRecentIndex(walk, scope)) {
    // The index of recent documents (refreshRecentIndex) holds every document but messages above its bound, so this
    // range's matches are its entries; ts_match_vq() then checks the words with their weights. Materialized, and the
    // range bounded by `id + 0`, so the planner reads that index rather than the primary key's range (docs/search.md,
    // "The index of recent documents (PostgreSQL)"). The bound is written as the index's own predicate writes it: a
    // bound parameter (a bigint) proved the predicate but stayed a second condition, which the planner intersected
    // with the primary key's 87,500 ids above it (2.2 ms of a 4 ms read for `love`).
    const bounded = idBounds(sql`d.id + 0`, walk);
    return sql`with m as materialized (
        select ${walkColumns(walk.withText)} from search_docs d
        where strip(d.tsv) @@ ${tsquery(match, false)} and d.id > ${sql.raw(recentBoundLiteral(walk.recentIndex))}
          and d.kind <> 'messages'
          and ts_match_vq(d.tsv, ${tsquery(match)}) ${bounded} and ${scopeCondition(scope)})
      select * from m order by m.id ${dir}`;
  }
  // ts_match_vq() is what @@ calls, but no index serves a function call: the plan becomes an id-ordered scan.
  const matched = walk.forceWalk
    ? sql`ts_match_vq(d.tsv, ${tsquery(match)})`
    : sql`d.tsv @@ ${tsquery(match)}`;
  // A guest sees no message, but a guest's scope may name messages among its kinds, or no kind at all: said outright,
  // the planner proves the predicate of the index of every other document (migration 0034) and walks it past a block
  // of messages instead of reading each of its rows. A list of kinds without messages implies it already, and a second
  // condition would only shrink the planner's estimate of the rows.
  const noMessage =
    scope.viewer === null && scope.kinds.includes('messages') ? sql` and d.kind <> 'messages'` : sql``;
  const rows = sql`
    select ${walkColumns(walk.withText)} from search_docs d
    where ${matched} ${bounds} and ${scopeCondition(scope)}${noMessage}`;
  if (walk.ginFirst && !walk.forceWalk && (hasKindGin(scope.kinds) || hasPreviewGin(scope.kinds))) {
    // Materialized, the matches are planned without the LIMIT: the kind's GIN index, every match, then the sort. The
    // id bounds apply outside: inside, the planner put a kind's id range at a few dozen rows (thousands in fact) and
    // intersected it with the main GIN index, whose prefix entries of a common word (28,820 for `coffee:*`) cost
    // 20-50 ms to read, where the kind's own index holds a few hundred (users: 4.5 ms in all).
    return sql`with m as materialized (
        select ${walkColumns(walk.withText)} from search_docs d where ${matched} and ${scopeCondition(scope)})
      select * from m where true ${idBounds(sql.ref('m.id'), walk)} order by m.id ${dir}`;
  }
  if (walk.forceWalk && walk.forward) {
    // Materialized, the matches are planned without the order: an ascending scan of the range, then the sort.
    return sql`with m as materialized (${rows}) select * from m order by m.id ${dir}`;
  }
  return sql`${rows} order by d.id ${dir}`;
}

/**
 * Whether a walk can read the index of recent documents it was given: its whole id range lies above the index's bound,
 * and it keeps no message (a guest sees none; a signed-in caller's are walked apart, pgMessagesApart).
 */
function inRecentIndex(walk: PgWalkRange, scope: Scope): walk is PgWalkRange & { recentIndex: number } {
  const noMessage = scope.viewer === null || !scope.kinds.includes('messages');
  return (
    noMessage &&
    walk.recentIndex !== undefined &&
    walk.afterId !== undefined &&
    walk.afterId >= walk.recentIndex
  );
}

/**
 * The first `offset + limit` matches of a PostgreSQL walk, of which only the window's rows are sent, with how many
 * there were: skipped rows are counted by the server instead of being sent (up to 10,000 of them at the deepest
 * offset). The last of them always comes back, to carry the count, and is dropped here when before the window.
 */
async function pgWalkCounted(
  db: Db,
  match: Match,
  scope: Scope,
  walk: PgWalkRange,
  offset: number,
  limit: number,
): Promise<{ rows: Candidate[]; total: number }> {
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  const r = await sql<CandidateRow & { n: number | string; rn: number | string }>`
    select * from (
      select m.*, count(*) over () as n, row_number() over (order by m.id ${dir}) as rn
      from (${pgWalkQuery(match, scope, walk)} limit ${offset + limit}) m
    ) s where s.rn > ${offset} or s.rn = s.n
    order by s.rn`.execute(db);
  const total = Number(r.rows[0]?.n ?? 0);
  return { rows: r.rows.filter((row) => Number(row.rn) > offset).map(toCandidate), total };
}

/** Whether `kinds` is one kind, of those `among`. */
function oneKindAmong(kinds: readonly DocKind[], among: readonly string[]): boolean {
  return kinds.length === 1 && among.includes(kinds[0] ?? '');
}

/** Whether a walk of these kinds can take the GIN-first plan (IdWalk.ginFirst): one kind with a GIN index of its own. */
export function hasKindGin(kinds: readonly DocKind[]): boolean {
  return oneKindAmong(kinds, KIND_GIN_KINDS);
}

/**
 * Whether a walk of these kinds is one kind with few documents and a GIN index of its own (media, migration 0035):
 * a preview of it takes the GIN-first plan for a word the statistics find sparse (exactDocs, previewViaKindGin).
 */
export function hasPreviewGin(kinds: readonly DocKind[]): boolean {
  return oneKindAmong(kinds, PREVIEW_GIN_KINDS);
}

/** At most this many documents of one kind in a bounded id range are walked rather than looked up in GIN. */
const FEW_DOCS = 10_000;

/**
 * Whether one kind has fewer than FEW_DOCS documents in the walk's id range (PostgreSQL, bounded walks): then
 * walking them through search_docs_kind is cheap, while the planner may still read a common word's whole GIN
 * posting list to intersect it with them (177,000 entries, 25 ms, to find 400 media items).
 */
export async function fewDocsOfKind(
  db: Db,
  kinds: readonly DocKind[],
  walk: { beforeId?: number | undefined; afterId?: number | undefined },
): Promise<boolean> {
  const kind = kinds.length === 1 ? kinds[0] : undefined;
  // A messages-only walk goes through the viewer's sides or the index of words and parties (pgWalkQuery), never in
  // id order.
  if (kind === undefined || kind === 'messages') return false;
  if (walk.beforeId === undefined || walk.afterId === undefined) return false;
  // A range of fewer ids than FEW_DOCS holds fewer documents of any kind: no need to count them.
  if (walk.beforeId - walk.afterId - 1 < FEW_DOCS) return true;
  const r = await sql<{ n: number | string }>`
    select count(*) as n from (
      select 1 from search_docs where kind = ${kind} and id > ${walk.afterId} and id < ${walk.beforeId}
      limit ${FEW_DOCS}) s`.execute(db);
  return Number(r.rows[0]?.n ?? FEW_DOCS) < FEW_DOCS;
}

/**
 * PostgreSQL: with fewer than `fewMessages` entries of the viewer's two sides in a walk's range, their messages are
 * walked rather than looked up in the index of words and parties (fewMessagesOf); with fewer than `denseFewMessages`
 * when the statistics put the words of a prefix in `denseShare` of the documents or more (IdWalk.prefixShare).
 * Tests set `fewMessages` to 0 to take that index.
 */
export const messageWalkTuning = { fewMessages: 200, denseShare: 0.2, denseFewMessages: 2_000 };

/**
 * Whether a signed-in walk of messages alone (PostgreSQL) has fewer than `fewMessages` entries of the viewer's two
 * sides in its id range: then testing each message costs less than the index of words and parties, whose read of a
 * common word's entries is the same whatever the range (0.2-7.2 ms a search over the 20 commonest words as
 * bench_user); a message tested costs about 2 µs. For a prefix the statistics find dense (IdWalk.prefixShare), up
 * to `denseFewMessages`: that index reads an entry for every message holding a word the prefix starts, about 0.4 µs
 * each (bench_user's 1,187 messages walked in 1.6-2.9 ms whatever the words, against 8.4-12.2 ms through the index for
 * the 23,236 messages matching `the:*`; docs/search.md, "Messages by words and party (PostgreSQL)"). Counting up to
 * 2,000 of the caller's messages reads two index ranges only (bench_user's 1,187 in 0.4 ms, 200 in 0.24, in psql).
 */
async function fewMessagesOf(db: Db, scope: Scope, walk: IdWalk): Promise<boolean> {
  const viewer = scope.viewer;
  const { fewMessages, denseShare, denseFewMessages } = messageWalkTuning;
  if (viewer === null || !onlyMessages(scope) || fewMessages <= 0) return false;
  const few = (walk.prefixShare ?? 0) >= denseShare ? Math.max(fewMessages, denseFewMessages) : fewMessages;
  const bounds = idBounds(sql.ref('d.id'), walk);
  const side = (column: 'owner_uuid' | 'recipient_uuid') =>
    sql`select 1 from search_docs d where d.kind = 'messages' and ${sql.ref(`d.${column}`)} = ${viewer} ${bounds}`;
  // Prepared: two index ranges whatever the values, where planning took longer than the count.
  const r = await sql<{ n: number | string }>`select ${PREPARED} count(*) as n
    from (${side('owner_uuid')} union all ${side('recipient_uuid')} limit ${few}) s`.execute(db);
  return Number(r.rows[0]?.n ?? few) < few;
}

/**
 * PostgreSQL, a signed-in search of messages with other kinds: the viewer's messages (through their sides or the
 * index of their words and parties, pgWalkQuery) and the other kinds (bounded to those kinds' own ids) are walked
 * apart and merged by id: the same rows in the same order. One walk in id order crossed every message of its range
 * row by row, though the viewer sees few of them: where the newest 50,000 ids were messages (the seeded world on
 * PostgreSQL before its index was built in creation order), "love" for bench_user walked about 90,000 ids
 * (docs/search.md, "Signed-in searches on PostgreSQL"). Undefined when it does not apply.
 */
async function pgMessagesApart(
  db: Db,
  match: Match,
  scope: Scope,
  walk: IdWalk,
): Promise<Candidate[] | undefined> {
  const others = scope.kinds.filter((k) => k !== 'messages');
  if (scope.viewer === null || others.length === 0 || others.length === scope.kinds.length) return undefined;
  const need = walk.offset + walk.limit;
  const messages = { ...scope, kinds: ['messages'] as const };
  const { first, last } = walk.otherKinds ?? (await docIdRange(db, 'postgres', others));
  const bounds = {
    afterId: Math.max(walk.afterId ?? first - 1, first - 1),
    beforeId: Math.min(walk.beforeId ?? last + 1, last + 1),
  };
  const rest = { ...scope, kinds: others };
  const empty = last === 0 || bounds.beforeId <= bounds.afterId + 1;
  const theirs = async (window: { offset: number; limit: number }) =>
    empty ? [] : findMatchesById(db, 'postgres', match, rest, { ...walk, ...bounds, ...window });
  const mineWalk = { ...walk, offset: 0, limit: need };
  if (walk.offset === 0) {
    // A first page (the ranked candidates): both at once, on two connections.
    const [mine, other] = await Promise.all([
      findMatchesById(db, 'postgres', match, messages, mineWalk),
      theirs({ offset: 0, limit: need }),
    ]);
    return merged(mine, other, walk);
  }
  const mine = await findMatchesById(db, 'postgres', match, messages, mineWalk);
  // Without a message of the viewer's in the range (the usual case), the other kinds' walk is the whole answer; a
  // deep page then skips its matches on the server instead of receiving them.
  if (mine.length === 0) return theirs({ offset: walk.offset, limit: walk.limit });
  return merged(mine, await theirs({ offset: 0, limit: need }), walk);
}

/** Two walks' first `offset + limit` matches merged in the walk's order, windowed. */
export function merged(mine: Candidate[], theirs: Candidate[], walk: IdWalk): Candidate[] {
  const order = idOrder(walk.direction);
  return [...mine, ...theirs].sort((a, b) => order(a.id, b.id)).slice(walk.offset, walk.offset + walk.limit);
}

/** A comparator of ids in a walk's order. */
function idOrder(direction: 'asc' | 'desc'): (a: number, b: number) => number {
  return direction === 'asc' ? (a, b) => a - b : (a, b) => b - a;
}

/**
 * Matching documents in scope in index order, windowed (with their text, or on SQLite its statistics, if
 * `withText`). Nothing is scored or sorted: FTS5 walks its doclists in rowid order and stops after the window. On
 * PostgreSQL, a descending walk given `walkAbove` first asks for the ids above it: bounded that way, the planner
 * reads a middling word's GIN entries of the recent documents only, instead of every match of the index to sort
 * them (50,000 rows for a word in 2% of 1,000,000 posts); older ids are asked for only when the recent ones do not
 * fill the window (the deep pages of docs/search.md choose `walkAbove` from the query's density).
 */
export async function findMatchesById(
  db: Db,
  dialect: Dialect,
  match: Match,
  scope: Scope,
  given: IdWalk,
): Promise<Candidate[]> {
  // A guest sees no message: a messages-only search would walk every matching message to keep none.
  if (scope.viewer === null && onlyMessages(scope)) return [];
  if (given.limit <= 0) return [];
  if (dialect === 'postgres') {
    const apart = await pgMessagesApart(db, match, scope, given);
    if (apart) return apart;
    // Every read below lies inside the walk's range, so one count decides them all; the few messages are read at
    // once, not split at `walkAbove` (which bounds reads of the index, not of these).
    const walk: IdWalk & PgWalkRange = { ...given, partyWalk: await fewMessagesOf(db, scope, given) };
    if (walk.partyWalk) return pgWalk(db, match, scope, walk, walk.offset, walk.limit);
    const above = walk.walkAbove;
    const lowest = Math.max(walk.afterId ?? 0, above ?? 0);
    if (
      walk.direction === 'asc' ||
      above === undefined ||
      (walk.beforeId ?? Number.MAX_SAFE_INTEGER) <= lowest + 1
    ) {
      // Entirely below `walkAbove` (or ascending): older documents, where a query is rarer; the planner decides,
      // unless the kind has few documents there (see fewDocsOfKind).
      // A sparse single-kind walk goes GIN first (ginFirst) whatever the kind's size: its matches are few either way.
      const forceWalk = walk.forceWalk || (!walk.ginFirst && (await fewDocsOfKind(db, scope.kinds, walk)));
      return pgWalk(db, match, scope, { ...walk, forceWalk }, walk.offset, walk.limit);
    }
    const bounded = { ...walk, afterId: lowest };
    // A kind with few documents in the range is walked (fewDocsOfKind), as below, unless its own GIN goes first.
    const forceRecent = walk.forceWalk || (!walk.ginFirst && (await fewDocsOfKind(db, scope.kinds, bounded)));
    const recent = await pgWalkCounted(
      db,
      match,
      scope,
      { ...bounded, forceWalk: forceRecent, forward: forceRecent && walk.forward },
      walk.offset,
      walk.limit,
    );
    let page = recent.rows;
    if (recent.total === walk.offset + walk.limit || (walk.afterId ?? 0) >= above) return page;
    let skipped = recent.total;
    let top = above;
    const step = olderStep(walk, lowest, recent.total);
    if (step !== undefined) {
      // The recent range's own count of matches is the better density: the older ids expected to hold the rest,
      // with a margin, are asked next (docs/search.md, "Deep pages from disk (PostgreSQL)").
      const range = { ...walk, beforeId: above + 1, afterId: step };
      const offset = Math.max(0, walk.offset - skipped);
      const limit = walk.limit - page.length;
      const older = await pgWalkCounted(
        db,
        match,
        scope,
        { ...range, forceWalk: await fewDocsOfKind(db, scope.kinds, range) },
        offset,
        limit,
      );
      page = page.concat(older.rows);
      if (older.total === offset + limit) return page;
      skipped += older.total;
      top = step;
    }
    const older = await pgWalk(
      db,
      match,
      scope,
      {
        ...walk,
        beforeId: top + 1,
        forceWalk: await fewDocsOfKind(db, scope.kinds, { ...walk, beforeId: top + 1 }),
      },
      Math.max(0, walk.offset - skipped),
      walk.limit - page.length,
    );
    return page.concat(older);
  }
  return sqliteWalk(db, match, scope, given);
}

/**
 * SQLite: findMatchesById over the FTS5 tables (one, or two with English stemming). Where the index's own filter is
 * the whole scope (ftsHoldsScope: a guest's, or anyone's users and networks), skipped matches are walked in the index
 * alone and only the page's rows are read (docs/search.md, "The scope inside the full-text index (SQLite)"); where it
 * is the scope of all but the friends-only and private documents (ftsDecidesAllButRestricted: a signed-in caller's
 * content), a deep page reads only those documents' rows (restrictedApartIds).
 */
async function sqliteWalk(db: Db, match: Match, scope: Scope, walk: IdWalk): Promise<Candidate[]> {
  const where = scopeCondition(scope);
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  const columns = walkColumns(walk.withText, match.terms);
  const inIndex = ftsHoldsScope(scope);
  const apart = walk.offset > 0 && !inIndex && ftsDecidesAllButRestricted(scope);
  const walked = ftsTables(match).map((table) => ftsWalk(match, scope, walk, table));
  const [only] = walked;
  if (only && walked.length === 1 && !apart) {
    const r =
      walk.offset > 0 && inIndex
        ? await sql<CandidateRow>`
            select ${columns} from (${only.ids} limit ${walk.limit} offset ${walk.offset}) f
            join search_docs d on d.id = f.id
            where ${where}
            order by d.id ${dir}`.execute(db)
        : await sql<CandidateRow>`${only.rows(columns)} limit ${walk.limit} offset ${walk.offset}`.execute(
            db,
          );
    return r.rows.map(toCandidate);
  }
  // Two tables: the window is cut from the merge of each one's first offset + limit matches. Those come as ids in
  // one text per table: 10,000 rows as objects cost more to build and send from a reader thread than the walk itself
  // (118 ms of CPU against 40-60 ms for "lov" at offset 9,900). Only the window's rows are then read, and the scope
  // applied to them. Merged in SQL instead (UNION, then the page) it was no faster: a guest's English deep pages took
  // 17.5 ms p50 against 15.1-15.3 (bench/search-latency.ts), the temporary B-trees costing what this merge does.
  const need = walk.offset + walk.limit;
  const ids = (
    apart
      ? await restrictedApartIds(db, match, scope, walk)
      : mergedIds(
          await Promise.all(
            walked.map((query) => idList(db, inIndex ? query.ids : query.rows(sql`d.id`), need)),
          ),
          walk.direction,
        )
  ).slice(walk.offset, need);
  if (ids.length === 0) return [];
  const r = await sql<CandidateRow>`
    select ${columns} from search_docs d
    where d.id in (${sql.join(ids.map(rowidValue))}) and ${where}`.execute(db);
  const byId = new Map(r.rows.map((row) => [Number(row.id), toCandidate(row)]));
  return ids.map((id) => byId.get(id)).filter((c) => c !== undefined);
}

/**
 * SQLite, a signed-in deep walk (ftsDecidesAllButRestricted): its first `offset + limit` matches in scope, in the
 * walk's order, found in two parts. The matches the index's filter decides alone (public posts, comments and media,
 * users, networks, the caller's messages) are read from the index without their rows; then, among the ids those
 * reach, the friends-only and private matches (one in eight of a seeded world's) are found in the index and only
 * their rows checked against the scope. One walk read the scope of every match it skipped: 25 ms for 12,000 matches
 * of `lov` as bench_user, where the two parts take 4-11 ms (docs/search.md, "Signed-in deep pages (SQLite)").
 */
async function restrictedApartIds(db: Db, match: Match, scope: Scope, walk: IdWalk): Promise<number[]> {
  const viewer = scope.viewer;
  if (viewer === null) throw new Error('a guest has no restricted matches to walk apart');
  const need = walk.offset + walk.limit;
  const tables = ftsTables(match);
  const decided = await Promise.all(
    tables.map((table) =>
      idList(db, ftsWalk(match, scope, walk, table, { ...ftsKinds(scope), publicOnly: true }).ids, need),
    ),
  );
  const open = mergedIds(decided, walk.direction);
  // A restricted match past the need-th decided one has `need` matches before it and cannot reach the window. That
  // match lies within the walk's own bounds, so it is the nearer bound on that side.
  const last = open.length >= need ? open[need - 1] : undefined;
  const reach =
    last === undefined
      ? walk
      : walk.direction === 'desc'
        ? { ...walk, afterId: last }
        : { ...walk, beforeId: last };
  const checked = await Promise.all(
    tables.map((table) =>
      idList(db, visibleRestricted(match, scope, viewer, reach, last !== undefined, table), need),
    ),
  );
  return mergedIds([open, ...checked], walk.direction);
}

/**
 * One FTS5 table's friends-only and private matches of the walk that `viewer` may see, as `id`, in the walk's order:
 * the index's filter keeps the kinds (ftsRestrictedMatch), and each match is checked in the index of such documents
 * (migrations 0031, 0032) against the viewer (their own, or a friend's friends-only) and the scope's language. The rows
 * of a page are checked against the whole scope when read.
 */
function visibleRestricted(
  match: Match,
  scope: Scope,
  viewer: string,
  walk: IdWalk,
  bounded: boolean,
  { table, lastPrefix }: { table: 'search_fts' | 'search_fts_en'; lastPrefix: boolean },
): RawBuilder<unknown> {
  const rowid = sql.ref(`${table}.rowid`);
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  // Only posts, comments and media are friends-only or private: content, which the scope keeps in its language alone.
  const language = contentLanguage(scope);
  const inLanguage = language ? sql`and d.language = ${language}` : sql``;
  return sql`select d.id from ${sql.table(table)}
    join search_docs d indexed by search_docs_restricted on d.id = ${rowid}
    where ${sql.table(table)} match ${restrictedMatchText(match, scope, bounded, lastPrefix)}
      ${idBounds(rowid, walk, rowidValue)} and ${sql.raw(restrictedVisibility('d'))}
      and ${visibleTo(viewer, 'd.owner_uuid', 'd.visibility', true)} ${inLanguage}
    order by ${rowid} ${dir}`;
}

/** The ids of the first `limit` rows of a query that selects `id`, in its order, as one text from the database. */
async function idList(db: Db, query: RawBuilder<unknown>, limit: number): Promise<number[]> {
  const r = await sql<{ ids: string | null }>`
    select group_concat(id) as ids from (${query} limit ${limit}) s`.execute(db);
  return parsedIds(r.rows[0]?.ids ?? '');
}

/** The ids of a `group_concat` text (readWholeNumbers: 0.26 ms for 10,000 where split and Number took 1.0). */
export function parsedIds(text: string): number[] {
  return readWholeNumbers(text, ',', (c) => `a list of ids holds ${c}`);
}

/**
 * Lists of ids merged into one without repeats, in a walk's order. Each list comes from a statement in that order, so
 * they are merged in one pass each; one out of order (never seen) is sorted first. Two English tables' 10,000 ids
 * put in a set and sorted took 3.5-8.8 ms of the event loop on every deep page, merged 0.4-2.6.
 */
export function mergedIds(lists: number[][], direction: 'asc' | 'desc'): number[] {
  const order = idOrder(direction);
  let merged: number[] = [];
  for (const list of lists) {
    const sorted = list.every((id, i) => i === 0 || order(list[i - 1] as number, id) < 0)
      ? list
      : [...new Set(list)].sort(order);
    merged = mergedPair(merged, sorted, order);
  }
  return merged;
}

/** Two lists of distinct ids, each in `order`, as one in that order, an id in both once. */
function mergedPair(a: number[], b: number[], order: (x: number, y: number) => number): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as number;
    const y = b[j] as number;
    const c = order(x, y);
    if (c <= 0) i++;
    if (c >= 0) j++;
    out.push(c <= 0 ? x : y);
  }
  for (; i < a.length; i++) out.push(a[i] as number);
  for (; j < b.length; j++) out.push(b[j] as number);
  return out;
}

/**
 * One FTS5 table's walk of a match in `scope` within the walk's bounds, in its order: `rows` checks each match's row
 * against the scope (and reads `columns`); `ids` reads none and keeps what the FTS5 filter keeps, as `id`. The filter
 * is the scope's (ftsKinds) unless given.
 */
function ftsWalk(
  match: Match,
  scope: Scope,
  walk: IdWalk,
  { table, lastPrefix }: { table: 'search_fts' | 'search_fts_en'; lastPrefix: boolean },
  filter: FtsKinds = ftsKinds(scope),
) {
  const text = matchText(match, filter, lastPrefix);
  const rowid = sql.ref(`${table}.rowid`);
  const bounds = idBounds(rowid, walk, rowidValue);
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  // Without text, each match is looked up in the (id, kind, visibility, language) index, not the table (migration
  // 0018): a public match is judged without its row, which a deep page from disk must otherwise read for every match
  // it skips. A walk of ranked candidates reads every row's text anyway, and the index would be one more lookup.
  const docs = walk.withText ? sql`search_docs d` : sql`search_docs d indexed by search_docs_scope`;
  return {
    rows: (columns: RawBuilder<unknown>) => sql`
      select ${columns} from ${sql.table(table)} join ${docs} on d.id = ${rowid}
      where ${sql.table(table)} match ${text} ${bounds} and ${scopeCondition(scope)}
      order by ${rowid} ${dir}`,
    ids: sql`select ${rowid} as id from ${sql.table(table)}
      where ${sql.table(table)} match ${text} ${bounds}
      order by ${rowid} ${dir}`,
  };
}

/** The older range of a short first walk holds this many times the matches still needed, by the first's density. */
const OLDER_MARGIN = 2;

/**
 * The lower id bound of the older range a PostgreSQL walk asks next when its recent range (ids `lowest` to
 * `walk.beforeId`, holding `found` matches) fell short of the window, or undefined when that range gives no density
 * or the bound would not narrow the walk. Unbounded, the older walk's GIN plan reads the heap row of every match of
 * the word, which from disk took 1-2 s for one deep page; bounded, PostgreSQL intersects the GIN and id indexes first.
 */
function olderStep(walk: IdWalk, lowest: number, found: number): number | undefined {
  if (found === 0 || walk.beforeId === undefined || walk.beforeId <= lowest) return undefined;
  const needed = walk.offset + walk.limit - found;
  const ids = Math.ceil((OLDER_MARGIN * needed * (walk.beforeId - lowest)) / found);
  const step = lowest - ids;
  return step > (walk.afterId ?? 0) ? step : undefined;
}
