import { type RawBuilder, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { DOC_TABLES, PG_STEMMERS, SQLITE_DOC_SOURCES } from '../../db/migrations/0002-search.ts';
import { KIND_GIN_KINDS } from '../../db/migrations/0014-search-kind-gin.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { FLUSH_PENDING_SEARCH_DOCS } from '../../db/search-pending.ts';
import { visibleTo } from '../connection/visibility.ts';
import { tagVisibleTo } from '../tag-association/tag-association.repository.ts';
import { type FtsKinds, ftsMatch, isPrefixTerm, LONGEST_PREFIX_INDEX, partyToken } from './search.query.ts';

/** Kinds of item in the search index. */
export const DOC_KINDS = ['user', 'network', 'post', 'comment', 'media', 'messages'] as const;

/** One kind of indexed item. */
export type DocKind = (typeof DOC_KINDS)[number];

/** Which documents a search may return: kinds, the viewer's privacy, language, excluded and friends-only users. */
export interface Scope {
  kinds: readonly DocKind[];
  viewer: string | null;
  /** Content (posts, comments, media, messages) limited to this language; users and networks are not. */
  language?: string | undefined;
  excludeUuids?: string[] | undefined;
  /** Only documents whose uuid is a confirmed friend of this user (friend search). */
  friendsOf?: string | undefined;
}

/** What the words must match and with which stemming. */
export interface Match {
  terms: string[];
  /** Language whose stemmer applies besides the plain words (undefined: plain words only). */
  stem?: string | undefined;
  /** SQLite: the indexed words a long last term stands for (expandPrefix); undefined: a prefix query. */
  prefixWords?: readonly string[] | undefined;
}

/** Most words a long last term is expanded to; past this many, it stays a prefix query. */
const MAX_PREFIX_WORDS = 32;

/**
 * SQLite: the indexed words that start with the last term, when it matches as a prefix longer than any FTS5 prefix
 * index and few words do (docs/search.md, "Long prefixes"); undefined otherwise. FTS5 answers such a prefix by
 * merging every such word's whole doclist before its first row, on each statement of a search (about 2 ms for
 * `coffee*` on the 1,000,000-post world, a dozen times per `/search/types`); the words, read once from the index's
 * vocabulary (migration 0012), are read lazily and stop with the walk. Words indexed after this read are not
 * matched by this search, as if it had run a moment earlier.
 */
export async function expandPrefix(db: Db, dialect: Dialect, terms: string[]): Promise<string[] | undefined> {
  const last = terms.length - 1;
  const term = terms[last];
  if (term === undefined || !isPrefixTerm(terms, last)) return undefined;
  if ([...term].length <= LONGEST_PREFIX_INDEX) return undefined;
  // PostgreSQL: the lexemes of migration 0025, every one any document ever held (a superset matches the same rows).
  const r =
    dialect === 'postgres'
      ? await sql<{ term: string }>`
          select distinct word as term from search_words where ${prefixCondition('word', term)}
          order by word limit ${MAX_PREFIX_WORDS + 1}`.execute(db)
      : await sql<{ term: string }>`
          select term from search_fts_vocab where ${prefixCondition('term', term)}
          limit ${MAX_PREFIX_WORDS + 1}`.execute(db);
  const words = r.rows.map((row) => row.term).filter((w) => w.startsWith(term));
  // PostgreSQL: a quote or a backslash would need tsquery escapes a lexeme is unlikely to need (tsquery writes the
  // words as they are); such a prefix stays a prefix. FTS5's match text quotes any word (ftsMatch).
  if (dialect === 'postgres' && words.some((w) => /['\\]/.test(w))) return undefined;
  return words.length > MAX_PREFIX_WORDS ? undefined : words;
}

/** A document found, in result order. */
export interface DocRef {
  id: number;
  kind: DocKind;
  uuid: string;
}

/** An ordering of documents by a column other than the index order (full sort of the matches). */
export interface DocOrder {
  column: 'updated_at' | 'username' | 'karma';
  direction: 'asc' | 'desc';
}

const CONTENT_KINDS = ['post', 'comment', 'media', 'messages'];

/**
 * The scope as a condition on `search_docs d`: privacy is part of the query, never a filter afterwards. Walks stop at
 * a limit, so the friends test probes each row that needs it (visibleTo's `probe`); `probe` false for a statement
 * that tests every match (a full sort), where PostgreSQL's one hash of the viewer's friends is the cheaper plan.
 */
function scopeCondition(scope: Scope, probe = true): RawBuilder<unknown> {
  // Every document has one of DOC_KINDS: the condition is left out when it would not narrow anything.
  const parts: RawBuilder<unknown>[] =
    scope.kinds.length < DOC_KINDS.length ? [sql`d.kind in (${sql.join([...scope.kinds])})`] : [];
  const visible = visibleTo(scope.viewer, 'd.owner_uuid', 'd.visibility', probe);
  parts.push(
    scope.viewer === null
      ? sql`${visible}`
      : sql`(${visible} or (d.visibility = 'message' and d.recipient_uuid = ${scope.viewer}))`,
  );
  if (scope.language && scope.kinds.some((k) => CONTENT_KINDS.includes(k))) {
    parts.push(sql`(d.kind in ('user', 'network') or d.language = ${scope.language})`);
  }
  if (scope.excludeUuids && scope.excludeUuids.length > 0) {
    parts.push(sql`d.uuid not in (${sql.join(scope.excludeUuids)})`);
  }
  if (scope.friendsOf) {
    parts.push(
      sql`exists (select 1 from friends fr where fr.user_uuid = ${scope.friendsOf} and fr.friend_uuid = d.uuid)`,
    );
  }
  return sql.join(parts, sql` and `);
}

/**
 * The scope's kinds as an FTS5 column filter (kindFilter). A guest never sees a message, so a guest's search leaves
 * messages out inside the index: the newest-first walk then skips them without reading their rows (in a seeded world
 * the newest 50,000 documents are messages; "the" walked 3.7 ms instead of 0.7).
 */
function ftsKinds(scope: Scope): FtsKinds {
  if (scope.viewer === null) return kindFilter(scope.kinds.filter((k) => k !== 'messages'));
  // A signed-in caller sees the messages they are a party of: the index keeps those alone (migration 0020).
  return { ...kindFilter(scope.kinds), party: partyToken(scope.viewer) };
}

/**
 * Kinds as an FTS5 column filter naming the fewer tokens: every kind but messages as `NOT kind : messages`. Each
 * token of an OR is a doclist FTS5 reads in full, bounds or not: `kind : (user OR network OR post OR comment OR
 * media)` cost 2.1 ms per count of `love` on the 1,000,000-post world, the NOT form 0.06 ms. Every document has one
 * kind, so both keep the same documents.
 */
function kindFilter(kinds: readonly DocKind[]): FtsKinds {
  if (kinds.length >= DOC_KINDS.length) return {};
  const others = DOC_KINDS.filter((k) => !kinds.includes(k));
  return others.length < kinds.length ? { except: others } : { only: kinds };
}

/** The FTS5 MATCH text of a match (ftsMatch), with its long last word's expansion when it has one. */
function matchText(match: Match, kinds: FtsKinds, lastPrefix = true): string {
  return ftsMatch(match.terms, kinds, lastPrefix, match.prefixWords);
}

/** Kinds whose documents are public whatever their source (SQLITE_DOC_SOURCES: users and networks). */
const PUBLIC_KINDS: readonly DocKind[] = ['user', 'network'];

/**
 * Whether every document of the scope's kinds is in it, so a walk may skip matches without reading their rows: user
 * and network documents are public for everybody, and nothing else narrows the scope. The walk still applies the
 * scope to the rows it returns.
 */
function everyDocInScope(scope: Scope): boolean {
  return (
    scope.kinds.every((k) => PUBLIC_KINDS.includes(k)) &&
    (scope.excludeUuids ?? []).length === 0 &&
    scope.friendsOf === undefined
  );
}

/** The FTS5 tables a match runs on: the English-stemmed one (whole words) besides the plain one for English. */
function ftsTables(match: Match): { table: 'search_fts' | 'search_fts_en'; lastPrefix: boolean }[] {
  const plain = { table: 'search_fts' as const, lastPrefix: true };
  return match.stem === 'en' ? [plain, { table: 'search_fts_en', lastPrefix: false }] : [plain];
}

/**
 * The tsquery of a match: all words as typed with the last as a prefix, or (with a stemming language) all words
 * stemmed as whole words; the same two alternatives as the two FTS5 tables on SQLite.
 */
function tsquery(match: Match, weighted = true): RawBuilder<unknown> {
  // Plain lexemes carry weight A, stemmed ones B (migration 0005): words as typed match plain lexemes only. Without
  // the weights the query matches a superset, which an index without weights answers without rechecking each row.
  const weight = weighted ? 'A' : '';
  const suffix = (i: number) => (isPrefixTerm(match.terms, i) ? ':*' : ':') + weight;
  // A long last word as the indexed words it starts (expandPrefix), which GIN reads as it reads any word.
  const plainTerm = (t: string, i: number) =>
    isExpandedPrefix(match, i)
      ? (match.prefixWords ?? []).map((w) => `'${w}':${weight}`).join(' | ')
      : `'${t}'${suffix(i)}`;
  const all = (config: string, plain: boolean) =>
    sql.join(
      match.terms.map((t, i) => sql`to_tsquery(${config}::regconfig, ${plain ? plainTerm(t, i) : `'${t}'`})`),
      sql` && `,
    );
  const stemmer = match.stem ? PG_STEMMERS[match.stem] : undefined;
  if (!stemmer) return sql`(${all('simple', true)})`;
  return sql`((${all('simple', true)}) || (${all(`search_${stemmer}`, false)}))`;
}

/** Whether term `i` of a match is its last, a prefix that tsquery writes as the indexed words it starts. */
function isExpandedPrefix(match: Match, i: number): boolean {
  return isPrefixTerm(match.terms, i) && i === match.terms.length - 1 && (match.prefixWords ?? []).length > 0;
}

/**
 * A matching document with its text, for relevance: on SQLite the text's statistics for the query's terms instead
 * (`stats`, see walkColumns).
 */
export interface Candidate extends DocRef {
  title: string | null;
  body: string | null;
  stats?: string | undefined;
}

function toCandidate(r: CandidateRow): Candidate {
  return {
    id: Number(r.id),
    kind: r.kind as DocKind,
    uuid: r.uuid,
    title: r.title ?? null,
    body: r.body ?? null,
    ...(typeof r.stats === 'string' ? { stats: r.stats } : {}),
  };
}

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
   * PostgreSQL: find every match of the range through the kind's own GIN index first (KIND_GIN_KINDS), then sort
   * them by id, for a single-kind walk the caller found sparse: the planner would walk ids backwards to its LIMIT,
   * crossing every other kind's documents on the way (docs/search.md, "Rare words in one kind on PostgreSQL").
   * Ignored elsewhere, and when forceWalk is set.
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
   * kinds other than messages, when the caller knows them (spares a lookup per walk; see pgMessagesApart).
   */
  otherKinds?: { first: number; last: number } | undefined;
  /**
   * PostgreSQL, a deep page whose first range is walked in id order (forceWalk, sized to hold the page by
   * deepWalkSplit): that range is read forwards, every match of it, then ordered. Backwards, each heap block is a read
   * of its own, which the OS does not prefetch: the comments of 87,000 ids for `par` took 526 ms from disk, 95 ms
   * forwards. Warm, forwards costs more (51 against 31 ms: every match of the range is read and sorted, not only
   * those up to the limit), which a range sized to the page keeps small. Ignored elsewhere.
   */
  forward?: boolean | undefined;
  /**
   * PostgreSQL, a forced walk of the recent window: the bound of the index of recent documents (`search_docs_recent_tsv`,
   * every document with an id above it), which the caller found cheaper to read than the window's rows in id order.
   * Used only when the whole range lies above the bound; otherwise the walk goes as without it.
   */
  recentIndex?: number | undefined;
  offset: number;
  limit: number;
}

/** `and COLUMN < beforeId and COLUMN > afterId`, each only when given; `value` binds the ids (SQLite rowids). */
function idBounds(
  column: RawBuilder<unknown>,
  walk: { beforeId?: number | undefined; afterId?: number | undefined },
  value: (id: number) => unknown = (id) => id,
): RawBuilder<unknown> {
  const before = walk.beforeId === undefined ? sql`` : sql`and ${column} < ${value(walk.beforeId)}`;
  const after = walk.afterId === undefined ? sql`` : sql`and ${column} > ${value(walk.afterId)}`;
  return sql`${before} ${after}`;
}

/**
 * The select list of a walk: the text only when asked for. With `terms` (SQLite) the text's statistics for them
 * instead (search_stats, src/db/search-stats.ts): computed on the reader thread that reads the row, so the event loop
 * neither receives 1,000 texts per ranked search nor scans them (a third of its busy time under uncached searches).
 */
function walkColumns(withText: boolean | undefined, terms?: readonly string[]): RawBuilder<unknown> {
  if (!withText) return sql`d.id, d.kind, d.uuid`;
  if (terms === undefined) return sql`d.id, d.kind, d.uuid, d.title, d.body`;
  return sql`d.id, d.kind, d.uuid, search_stats(${terms.join(' ')}, d.title, d.body) as stats`;
}

type CandidateRow = {
  id: number | string;
  kind: string;
  uuid: string;
  title?: string | null;
  body?: string | null;
  stats?: string | null;
};

/**
 * An FTS5 rowid bound as an SQLite INTEGER. node:sqlite binds a JavaScript number as a REAL, and FTS5 does not seek
 * its doclists to a REAL bound: it walks them and filters (a four-word query bounded to the newest 2,000 rows took
 * 33 ms instead of 0.36 ms over 290,000 documents).
 */
function rowidValue(id: number): bigint {
  return BigInt(Math.trunc(id));
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
interface PgWalkRange {
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
function pgWalkQuery(match: Match, scope: Scope, walk: PgWalkRange): RawBuilder<unknown> {
  const bounds = idBounds(sql.ref('d.id'), walk);
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  if (scope.viewer !== null && scope.kinds.every((k) => k === 'messages')) {
    // Only the viewer's two sides see a message: the words and the viewer as a party are intersected in the index of
    // migration 0028, then the matches are sorted. Walking each side newest first through its partial index
    // (migration 0011) tested every message's tsvector (`love` as bench_user: 1,187 received messages for 19 matches,
    // 3.7 ms against 0.7; docs/search.md, "Messages by words and party (PostgreSQL)"). The scope stays as the check
    // of who sees a match.
    return sql`
      select ${walkColumns(walk.withText)} from search_docs d
      where d.kind = 'messages'
        and (d.tsv || search_message_parties(d.owner_uuid, d.recipient_uuid)) @@ (${tsquery(match)} && ${partyQuery(scope.viewer)})
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
  const rows = sql`
    select ${walkColumns(walk.withText)} from search_docs d
    where ${matched} ${bounds} and ${scopeCondition(scope)}`;
  if (walk.ginFirst && !walk.forceWalk && hasKindGin(scope.kinds)) {
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

/** Whether a walk of these kinds can take the GIN-first plan (IdWalk.ginFirst): one kind with a GIN index of its own. */
export function hasKindGin(kinds: readonly DocKind[]): boolean {
  return kinds.length === 1 && (KIND_GIN_KINDS as readonly string[]).includes(kinds[0] ?? '');
}

/** At most this many documents of one kind in a bounded id range are walked rather than looked up in GIN. */
const FEW_DOCS = 10_000;

/**
 * Whether one kind has fewer than FEW_DOCS documents in the walk's id range (PostgreSQL, bounded walks): then
 * walking them through search_docs_kind is cheap, while the planner may still read a common word's whole GIN
 * posting list to intersect it with them (177,000 entries, 25 ms, to find 400 media items).
 */
async function fewDocsOfKind(
  db: Db,
  kinds: readonly DocKind[],
  walk: { beforeId?: number | undefined; afterId?: number | undefined },
): Promise<boolean> {
  const kind = kinds.length === 1 ? kinds[0] : undefined;
  // A messages-only walk goes through the viewer's sides (pgWalkQuery), never in id order.
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
 * PostgreSQL, a signed-in search of messages with other kinds: the viewer's messages (through the index of their
 * words and parties, pgWalkQuery) and the other kinds (bounded to those kinds' own ids) are walked apart and merged by
 * id: the same rows in the same order. One walk in id order crossed every message of its range row by row, though
 * the viewer sees few of them: in a seeded world the newest 50,000 ids are messages, and "love" for bench_user
 * walked about 90,000 ids (docs/search.md, "Signed-in searches on PostgreSQL"). Undefined when it does not apply.
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
function merged(mine: Candidate[], theirs: Candidate[], walk: IdWalk): Candidate[] {
  const sign = walk.direction === 'asc' ? 1 : -1;
  return [...mine, ...theirs]
    .sort((a, b) => sign * (a.id - b.id))
    .slice(walk.offset, walk.offset + walk.limit);
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
  walk: IdWalk,
): Promise<Candidate[]> {
  // A guest sees no message: a messages-only search would walk every matching message to keep none.
  if (scope.viewer === null && scope.kinds.every((k) => k === 'messages')) return [];
  if (walk.limit <= 0) return [];
  if (dialect === 'postgres') {
    const apart = await pgMessagesApart(db, match, scope, walk);
    if (apart) return apart;
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
  const where = scopeCondition(scope);
  const dir = sql.raw(walk.direction === 'asc' ? 'asc' : 'desc');
  const tables = ftsTables(match);
  const [plainTable] = tables;
  if (plainTable && tables.length === 1 && walk.offset > 0 && everyDocInScope(scope)) {
    // Every document of these kinds is in scope: the skipped matches need no row, only the page does.
    const { table, lastPrefix } = plainTable;
    const rowid = sql.ref(`${table}.rowid`);
    const bounds = idBounds(rowid, walk, rowidValue);
    const r = await sql<CandidateRow>`
      select ${walkColumns(walk.withText, match.terms)} from (
        select ${rowid} as id from ${sql.table(table)}
        where ${sql.table(table)} match ${matchText(match, ftsKinds(scope), lastPrefix)} ${bounds}
        order by ${rowid} ${dir} limit ${walk.limit} offset ${walk.offset}) f
      join search_docs d on d.id = f.id
      where ${where}
      order by d.id ${dir}`.execute(db);
    return r.rows.map(toCandidate);
  }
  // Without text, each match is looked up in the (id, kind, visibility, language) index, not the table (migration
  // 0018): a public match is judged without its row, which a deep page from disk must otherwise read for every match it
  // skips. A walk of ranked candidates reads every row's text anyway, and the index would be one more lookup.
  const docs = walk.withText ? sql`search_docs d` : sql`search_docs d indexed by search_docs_scope`;
  const walked = tables.map(({ table, lastPrefix }) => {
    const text = matchText(match, ftsKinds(scope), lastPrefix);
    const rowid = sql.ref(`${table}.rowid`);
    const bounds = idBounds(rowid, walk, rowidValue);
    return (columns: RawBuilder<unknown>) => sql`
      select ${columns} from ${sql.table(table)} join ${docs} on d.id = ${rowid}
      where ${sql.table(table)} match ${text} ${bounds} and ${where}
      order by ${rowid} ${dir}`;
  });
  const [only] = walked;
  if (only && walked.length === 1) {
    const r = await sql<CandidateRow>`${only(walkColumns(walk.withText, match.terms))}
      limit ${walk.limit} offset ${walk.offset}`.execute(db);
    return r.rows.map(toCandidate);
  }
  // Two tables: the window is cut from the merge of each one's first offset + limit matches. Those come as ids in
  // one text per table: 10,000 rows as objects cost more to build and send from a reader thread than the walk itself
  // (118 ms of CPU against 40-60 ms for "lov" at offset 9,900). Only the window's rows are then read.
  const lists = await Promise.all(
    walked.map(async (query) => {
      const r = await sql<{ ids: string | null }>`
        select group_concat(id) as ids from (${query(sql`d.id`)} limit ${walk.offset + walk.limit}) s`.execute(
        db,
      );
      return (r.rows[0]?.ids ?? '')
        .split(',')
        .filter((x) => x !== '')
        .map(Number);
    }),
  );
  const sign = walk.direction === 'asc' ? 1 : -1;
  const ids = [...new Set(lists.flat())]
    .sort((a, b) => sign * (a - b))
    .slice(walk.offset, walk.offset + walk.limit);
  if (ids.length === 0) return [];
  const r = await sql<CandidateRow>`
    select ${walkColumns(walk.withText, match.terms)} from search_docs d
    where d.id in (${sql.join(ids.map(rowidValue))})`.execute(db);
  const byId = new Map(r.rows.map((row) => [Number(row.id), toCandidate(row)]));
  return ids.map((id) => byId.get(id)).filter((c) => c !== undefined);
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

/**
 * The samples that estimate a query's density for a deep walk (PostgreSQL): the newest `densitySample` ids of the
 * searched kinds and `spreadRanges` ranges of `spreadRangeIds` ids spread below them.
 */
export const deepWalkTuning = { densitySample: 2000, spreadRanges: 4, spreadRangeIds: 500 };
/**
 * The kinds whose newest documents measure a search (its recent window, its commonness, a deep walk's density): the
 * kinds besides messages when there are any, for a guest (who sees no message) and a signed-in caller alike (who
 * sees only their own, walked apart: pgMessagesApart); messages alone for a signed-in caller; none for a guest.
 */
export function sampledKinds(scope: Scope): readonly DocKind[] {
  const others = scope.kinds.filter((k) => k !== 'messages');
  return others.length > 0 || scope.viewer === null ? others : scope.kinds;
}

/** A deep walk's range holds this many times the matches it needs, by the estimate, to absorb chance. */
const DEEP_MARGIN = 1.25;
/** A deep walk over at most this many ids reads them in order (each a heap row) rather than through GIN. */
const DEEP_WALK_IDS = 150_000;

/**
 * Where a PostgreSQL deep walk that needs the `need` newest matches in scope should split (docs/search.md, "Deep
 * pages"): the matches in scope among the newest ids and in ranges spread below them (deepWalkTuning) give their
 * density, and the range expected to hold DEEP_MARGIN times `need` matches is asked first, in id order when short
 * enough (a common word), else through GIN bounded to that range, so neither reads every match of the index. A split
 * that falls short only costs a second query (the older ids, as without it); undefined (SQLite, or no match in any
 * sample, or too few ids to spread samples over) keeps the usual split.
 */
export async function deepWalkSplit(
  db: Db,
  dialect: Dialect,
  match: Match,
  scope: Scope,
  range: { first: number; top: number },
  need: number,
): Promise<{ walkAbove: number; forceWalk: boolean } | undefined> {
  if (dialect !== 'postgres') return undefined;
  // Sampled with others' messages (a seeded world's newest 50,000 ids), a signed-in caller's one or two own
  // messages among 2,000 ids gave a density so low that the split fell to the first id, and the walk read every
  // match through GIN (sampledKinds).
  const kinds = sampledKinds(scope);
  if (kinds.length === 0) return undefined;
  const { last } = await docIdRange(db, dialect, kinds);
  const top = Math.min(range.top, last);
  const { densitySample, spreadRanges, spreadRangeIds } = deepWalkTuning;
  // The matches in scope in a range, read in id order (ts_match_vq: never the GIN index).
  const inScope = (afterId: number, toId: number) =>
    sql`(select count(*) from (${pgWalkQuery(
      match,
      { ...scope, kinds },
      { direction: 'desc', afterId, beforeId: toId + 1, forceWalk: true },
    )}) s)`;
  // The walk reaches far below the newest ids (hundreds of thousands for a three-letter prefix), so ranges spread
  // below them join the sample, asked in the same statement: the newest alone are one kind in a seeded world (5,000
  // media), whose density put up to 2.15 times the needed matches in the first range (docs/search.md, "Deep
  // pages"). None among the newest ids: a block of new documents without the words (one author's burst) says nothing
  // of the rest of the index, where an unbounded walk would read every match through GIN; the spread ranges alone
  // then give the density, as for the ranking (countNewestAndSpread).
  const below = top - densitySample;
  const ranges = spreadIdRanges(range.first, below, spreadRanges, spreadRangeIds).map((r) =>
    inScope(r.afterId, r.toId),
  );
  const spreadSum = ranges.length === 0 ? sql`null::bigint` : sql.join(ranges, sql` + `);
  const r = await sql<{ newest: number | string; spread: number | string | null }>`
    select n.v as newest, ${spreadSum} as spread
    from (select ${inScope(below, top)} as v offset 0) n`.execute(db);
  const newest = Number(r.rows[0]?.newest ?? 0);
  const spread = Number(r.rows[0]?.spread ?? 0);
  const spreadIds = ranges.length * spreadRangeIds;
  // From the spread ranges alone, the split is measured below the sample, which is known to hold none.
  const [found, sampled, anchor] =
    newest > 0 ? [newest + spread, densitySample + spreadIds, top] : [spread, spreadIds, below];
  if (found === 0) return undefined;
  const ids = Math.ceil((DEEP_MARGIN * need * sampled) / found);
  return {
    walkAbove: Math.max(range.first - 1, anchor - ids),
    forceWalk: anchor - ids >= top - DEEP_WALK_IDS,
  };
}

/**
 * Whether more than `n` documents in the range could be in scope, from bounds that read no document row (a deep
 * page past them is empty; docs/search.md, "Deep pages"): the documents of the scope's kinds (the kind index), the
 * friends of a friends-only search, and on SQLite the documents matching the words whatever their privacy (the FTS5
 * doclists alone). Each stops counting at n + 1, so the answer costs at most n index entries of each, a fraction of
 * a walk that checks each match's scope.
 */
export async function mayHaveMoreThan(
  db: Db,
  dialect: Dialect,
  match: Match,
  scope: Scope,
  range: { afterId: number; beforeId: number },
  n: number,
): Promise<boolean> {
  const kinds = scope.kinds;
  if (scope.viewer === null && kinds.every((k) => k === 'messages')) return false;
  if (kinds.length < DOC_KINDS.length) {
    const docs = await sql<{ n: number | string }>`
      select count(*) as n from (
        select 1 from search_docs
        where kind in (${sql.join([...kinds])}) and id > ${range.afterId} and id < ${range.beforeId}
        limit ${n + 1}) s`.execute(db);
    if (Number(docs.rows[0]?.n ?? 0) <= n) return false;
  }
  if (scope.friendsOf) {
    const friends = await sql<{ n: number | string }>`
      select count(*) as n from (
        select 1 from friends where user_uuid = ${scope.friendsOf} limit ${n + 1}) s`.execute(db);
    if (Number(friends.rows[0]?.n ?? 0) <= n) return false;
  }
  // PostgreSQL would answer from the GIN index, reading a common word's whole posting list: only the walk is bounded.
  if (dialect === 'postgres') return true;
  // Each table's matches up to n + 1: their union holds more than n exactly when all the matches do.
  const capped = ftsTables(match).map(({ table, lastPrefix }) => {
    const rowid = sql.ref(`${table}.rowid`);
    return sql`select rowid from (select ${rowid} as rowid from ${sql.table(table)}
      where ${sql.table(table)} match ${matchText(match, ftsKinds(scope), lastPrefix)}
        and ${rowid} > ${rowidValue(range.afterId)} and ${rowid} < ${rowidValue(range.beforeId)}
      order by ${rowid} desc limit ${n + 1})`;
  });
  const r = await sql<{ n: number | string }>`
    select count(*) as n from (${sql.join(capped, sql` union `)}) s`.execute(db);
  return Number(r.rows[0]?.n ?? 0) > n;
}

/**
 * How many documents of these kinds with an id in (`afterId`, `toId`] match the words as typed (no stemming),
 * counted up to `cap`: how common the query is. Without `scope`, whoever may see them: an estimate that only chooses
 * a plan. With it, only those the scope holds: a count that decides what a caller sees must not move with documents
 * they may not read. Bounded on both engines whatever the word: FTS5 walks the doclist entries of the range up to
 * `cap` kept; PostgreSQL walks the ids of the range in order (ts_match_vq, which no index serves, so the planner
 * cannot pick the GIN index and read every match), but for one word in a kind with its own (pgCountInRange).
 */
export async function countMatchesIn(
  db: Db,
  dialect: Dialect,
  match: Match,
  kinds: readonly DocKind[],
  range: { afterId: number; toId: number },
  cap: number,
  scope?: Scope,
): Promise<number> {
  if (dialect === 'postgres') {
    const counted = pgCountInRange(match, kinds, range, cap, scope);
    const r = await sql<{ n: number | string }>`select ${counted} as n`.execute(db);
    return Number(r.rows[0]?.n ?? 0);
  }
  const plain: Match = { terms: match.terms, prefixWords: match.prefixWords };
  const counted = scope ? { ...scope, kinds } : undefined;
  const matched = sql`search_fts match ${matchText(plain, counted ? ftsKinds(counted) : kindFilter(kinds))}
    and search_fts.rowid > ${rowidValue(range.afterId)} and search_fts.rowid <= ${rowidValue(range.toId)}`;
  // In scope: each match is looked up in the scope index (migration 0018), its row read only where the visibility
  // alone does not decide, as a walk without text does.
  const r = counted
    ? await sql<{ n: number | string }>`
        select count(*) as n from (
          select d.id from search_fts join search_docs d indexed by search_docs_scope on d.id = search_fts.rowid
          where ${matched} and ${scopeCondition(counted)}
          order by search_fts.rowid desc limit ${cap}) s`.execute(db)
    : await sql<{ n: number | string }>`
        select count(*) as n from (
          select rowid from search_fts where ${matched} order by rowid desc limit ${cap}) s`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

/** A range of ids: (`afterId`, `toId`]. */
export interface IdRange {
  afterId: number;
  toId: number;
}

/**
 * `n` ranges of `size` ids evenly spaced over (first - 1, below], to sample a query's density across the index; none
 * when the ids there are too few to sample apart from the rest.
 */
export function spreadIdRanges(first: number, below: number, n: number, size: number): IdRange[] {
  const span = below - first + 1;
  if (n <= 0 || span < 4 * n * size) return [];
  return Array.from({ length: n }, (_, i) => {
    const toId = first - 1 + Math.round(((i + 1) * span) / (n + 1));
    return { afterId: toId - size, toId };
  });
}

/**
 * PostgreSQL: a scalar subquery counting, up to `cap`, the documents of these kinds in `range` that match the words
 * as typed (only those `scope` holds, when given). One word in a kind with a GIN index of its own is left to the
 * planner (oneWordCount); any other query is matched by ts_match_vq, which no index serves: the range is walked in
 * id order, never read through the GIN index.
 */
function pgCountInRange(match: Match, kinds: readonly DocKind[], range: IdRange, cap: number, scope?: Scope) {
  const plain: Match = { terms: match.terms, prefixWords: match.prefixWords };
  const narrow = kinds.length < DOC_KINDS.length;
  const where = scope
    ? sql`and ${scopeCondition({ ...scope, kinds })}`
    : narrow
      ? sql`and d.kind in (${sql.join([...kinds])})`
      : sql``;
  const matched =
    oneWordCount(match) && hasKindGin(kinds)
      ? sql`d.tsv @@ ${tsquery(plain)}`
      : sql`ts_match_vq(d.tsv, ${tsquery(plain)})`;
  return sql`(select count(*) from (
      select 1 from search_docs d
      where d.id > ${range.afterId} and d.id <= ${range.toId} and ${matched} ${where}
      limit ${cap}) s)`;
}

/**
 * Whether a PostgreSQL count of one kind with a GIN index of its own (hasKindGin) may use it: one whole word, or one
 * long prefix as the words it starts. The planner then intersects the word's entries in that index, at most one per
 * document of the kind, with the range's ids where that reads less than the range (`coffee` among the users' newest
 * 2,000 ids and four spread ranges, in `/search/types`: 0.7 ms a statement where the walk took 3.8). Its estimate
 * for one word comes from the column's statistics of its commonest lexemes, so a common word is still walked; for
 * several words it multiplies their frequencies as if independent, and read `the & and & of` through their whole
 * posting lists, and a short prefix stands for an unknown number of lexemes. Through the main index it read every
 * post's entry of `coffee` (27,000) to count the 40 newest of 2,000 posts: 6.9 ms, where the walk took 1.3.
 */
function oneWordCount(match: Match): boolean {
  return match.terms.length === 1 && (!isPrefixTerm(match.terms, 0) || isExpandedPrefix(match, 0));
}

/**
 * PostgreSQL: countMatchesIn of `newest` in `scope` (its kinds are the counted ones) and, in the same statement when
 * that count is under `spreadWhenUnder`, the matches summed over the `spread` ranges, whoever may see them (each
 * counted up to `spreadCap`; null when not counted). The spread ranges sample the whole index, so a block of
 * documents without the words at the top (one author's thousand posts) cannot make a common word look rare
 * (docs/search.md, "Common words under a block of new posts"); they choose a plan only, never which matches are
 * ranked. With `countDocs`, also every document of the kinds in `newest` when its count is at least `spreadWhenUnder`
 * and under its cap (null otherwise), for the density per document of a kind that shares its ids with others.
 */
export async function countNewestAndSpread(
  db: Db,
  match: Match,
  scope: Scope,
  newest: IdRange & { cap: number },
  spread: readonly IdRange[],
  spreadCap: number,
  spreadWhenUnder: number,
  countDocs = false,
): Promise<{ newest: number; spread: number | null; docs: number | null }> {
  const { kinds } = scope;
  // Every document of the kinds in the newest range, match or not (an index-only range of search_docs_kind per kind).
  const docs = countDocs
    ? sql.join(
        kinds.map(
          (k) =>
            sql`(select count(*) from search_docs where kind = ${k} and id > ${newest.afterId} and id <= ${newest.toId})`,
        ),
        sql` + `,
      )
    : sql`null::bigint`;
  const spreadSum =
    spread.length === 0
      ? sql`null::bigint`
      : sql.join(
          spread.map((r) => pgCountInRange(match, kinds, r, spreadCap)),
          sql` + `,
        );
  // The sum is asked only when the newest range is sparse (a CASE runs its subqueries only when chosen), the documents
  // only when it is dense but not common (under the cap); OFFSET 0 keeps the newest count one subquery, not copied
  // into every column.
  const r = await sql<{
    newest: number | string;
    spread: number | string | null;
    docs: number | string | null;
  }>`
    select n.v as newest, case when n.v < ${spreadWhenUnder} then ${spreadSum} end as spread,
      case when n.v >= ${spreadWhenUnder} and n.v < ${newest.cap} then ${docs} end as docs
    from (select ${pgCountInRange(match, kinds, newest, newest.cap, scope)} as v offset 0) n`.execute(db);
  const row = r.rows[0];
  const orNull = (v: number | string | null | undefined) =>
    v === null || v === undefined ? null : Number(v);
  return { newest: Number(row?.newest ?? 0), spread: orNull(row?.spread), docs: orNull(row?.docs) };
}

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
 * documents per kind, spread evenly), while the seeded world holds its kinds in blocks of ids (users first, messages
 * last): 1.2-1.8 s per search where the index answers in 0.1 ms, and under load searches ran into the statement
 * timeout. With a range, only the index gives that order.
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
 * messages and that of every kind it searches, and on PostgreSQL each statement is a round trip. With
 * `withRecentIndex` (PostgreSQL only) also the bound of the index of recent documents, undefined when there is none.
 */
export async function docIdRanges(
  db: Db,
  dialect: Dialect,
  kindSets: readonly (readonly DocKind[])[],
  withRecentIndex = false,
): Promise<{ ranges: { first: number; last: number }[]; recentIndex: number | undefined }> {
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
  // PostgreSQL: the bound of the index of recent documents, read in the same statement (no row: no such index).
  if (withRecentIndex) columns.push(sql`(select bound from search_recent where id = 1) as recent_bound`);
  // Prepared on PostgreSQL: the plan (each probe an index end) does not depend on the kinds bound.
  const r = await sql<
    Record<string, number | string | null>
  >`select ${PREPARED} ${sql.join(columns)}`.execute(db);
  const row = r.rows[0] ?? {};
  const bound = row.recent_bound;
  return {
    ranges: kindSets.map((_, i) => ({
      first: Number(row[`first${i}`] ?? 0),
      last: Number(row[`last${i}`] ?? 0),
    })),
    recentIndex: bound === null || bound === undefined ? undefined : Number(bound),
  };
}

/**
 * The newest id below `beforeId` of a document of these kinds, or of a message `viewer` sent or received (0 when
 * there is none): one index probe per kind (search_docs_kind) and per side (the partial message indexes of
 * migration 0011, PostgreSQL), so a run of documents the walk would skip (a block of others' messages) costs no walk.
 */
export async function newestIdBelow(
  db: Db,
  dialect: Dialect,
  kinds: readonly DocKind[],
  viewer: string | null,
  beforeId: number,
): Promise<number> {
  // PostgreSQL: the kinds as one loop (pgKindsEnd), whose generic plan is kept; a union of a probe per kind was
  // planned afresh at every bind, 0.7-2.7 ms, once for each chunk of a rare word's older walk.
  const probes =
    dialect === 'postgres'
      ? [sql`select ${pgKindsEnd('max', kinds, beforeId)} as v`]
      : kinds.map((k) => sql`select ${kindEnd('desc', k, beforeId)} as v`);
  if (viewer !== null) {
    for (const side of ['owner_uuid', 'recipient_uuid'] as const) {
      probes.push(sql`select (select max(id) from search_docs
        where kind = 'messages' and ${sql.ref(side)} = ${viewer} and id < ${beforeId}) as v`);
    }
  }
  // Prepared on PostgreSQL, as docIdRange: index-end probes whose plan does not depend on the values bound.
  const r = await sql<{
    v: number | string | null;
  }>`select ${PREPARED} max(v) as v from (${sql.join(probes, sql` union all `)}) k`.execute(db);
  return Number(r.rows[0]?.v ?? 0);
}

/**
 * Matching documents in scope ordered by update time, or username/karma for users, windowed. This sorts every
 * match (no shortcut exists for these orders); the kind filter keeps user searches to users.
 */
export async function findMatchesOrdered(
  db: Db,
  dialect: Dialect,
  match: Match,
  scope: Scope,
  order: DocOrder,
  offset: number,
  limit: number,
): Promise<DocRef[]> {
  if (scope.viewer === null && scope.kinds.every((k) => k === 'messages')) return [];
  const where = scopeCondition(scope, false);
  const dir = sql.raw(order.direction === 'asc' ? 'asc' : 'desc');
  const userJoin = order.column === 'username' || order.column === 'karma';
  const column =
    order.column === 'username'
      ? sql.ref('u.username_key')
      : order.column === 'karma'
        ? sql.ref('u.karma')
        : sql.ref(`d.${order.column}`);
  const join = userJoin ? sql`join users u on u.uuid = d.uuid` : sql``;
  let matched: RawBuilder<unknown>;
  if (dialect === 'postgres') {
    matched = sql`d.tsv @@ ${tsquery(match)}`;
  } else {
    const selects = ftsTables(match).map(
      ({ table, lastPrefix }) =>
        sql`select rowid from ${sql.table(table)} where ${sql.table(table)} match ${matchText(match, ftsKinds(scope), lastPrefix)}`,
    );
    matched = sql`d.id in (${sql.join(selects, sql` union `)})`;
  }
  const r = await sql<{ id: number | string; kind: string; uuid: string }>`
    select d.id, d.kind, d.uuid from search_docs d ${join}
    where ${matched} and ${where}
    order by ${column} ${dir}, d.id ${dir} limit ${limit} offset ${offset}`.execute(db);
  return r.rows.map(toCandidate);
}

/**
 * Names (users, networks, hashtags) sharing a trigram with the query: the candidates of typo tolerance. Hashtags only
 * if `viewer` (null for a guest) may see them, tested before the limit: a hashtag used only in private posts must not
 * take a place among the `limit` candidates, or the visible names it pushed out would tell that it exists.
 */
export async function findNameCandidates(
  db: Db,
  dialect: Dialect,
  kinds: readonly string[],
  grams: string[],
  limit: number,
  viewer: string | null,
): Promise<{ kind: string; uuid: string; name: string }[]> {
  if (grams.length === 0 || kinds.length === 0) return [];
  const visible = kinds.includes('hashtag')
    ? sql`and (n.kind <> 'hashtag' or exists (select 1 from tags t where t.uuid = n.uuid and ${tagVisibleTo(viewer, 't')}))`
    : sql``;
  // The names sharing the most trigrams with the query come first (then the newest), alike on both engines.
  if (dialect === 'postgres') {
    const likes = grams.map((g) => sql`n.name_fold like ${`%${g}%`}`);
    const shared = sql.join(
      likes.map((l) => sql`(case when ${l} then 1 else 0 end)`),
      sql` + `,
    );
    const r = await sql<{ kind: string; uuid: string; name: string }>`
      select n.kind, n.uuid, n.name from search_names n
      where n.kind in (${sql.join([...kinds])}) and (${sql.join(likes, sql` or `)}) ${visible}
      order by ${shared} desc, n.id desc limit ${limit}`.execute(db);
    return r.rows;
  }
  const perGram = grams.map(
    (g) =>
      sql`select rowid as id from search_names_tri where search_names_tri match ${`"${g.replaceAll('"', '""')}"`}`,
  );
  const r = await sql<{ kind: string; uuid: string; name: string }>`
    select n.kind, n.uuid, n.name
    from (select id, count(*) as shared from (${sql.join(perGram, sql` union all `)}) g group by id) m
    join search_names n on n.id = m.id
    where n.kind in (${sql.join([...kinds])}) ${visible}
    order by m.shared desc, n.id desc limit ${limit}`.execute(db);
  return r.rows;
}

/** Which of these uuids are documents in scope (the privacy condition applied to typo candidates); looked up by uuid first. */
export async function findDocsInScope(db: Db, uuids: string[], scope: Scope): Promise<DocRef[]> {
  if (uuids.length === 0) return [];
  const r = await sql<{ id: number | string; kind: string; uuid: string }>`
    select d.id, d.kind, d.uuid from search_docs d
    where d.id in (select x.id from search_docs x where x.uuid in (${sql.join(uuids)}))
      and ${scopeCondition(scope)}`.execute(db);
  return r.rows.map(toCandidate);
}

/**
 * A prefix condition on an indexed key column (binary collation on both engines): the range of keys from the prefix
 * up to the prefix followed by the highest code point. On PostgreSQL a range of bound values keeps its index in a
 * generic plan, where `like $1` needs the pattern's text at planning: a statement written with LIKE was planned
 * afresh at every run, and the hashtag completion's plan cost 4 ms for 0.06 ms of execution (docs/search.md,
 * "Prefix lookups planned once").
 */
function prefixCondition(column: string, prefix: string): RawBuilder<unknown> {
  const ref = sql.ref(column);
  return sql`${ref} >= ${prefix} and ${ref} < ${`${prefix}\u{10FFFF}`}`;
}

/** Users whose username key starts with `prefix`, friends of `friendsOf` only or not friends, by username. */
export async function findUsersByUsernamePrefix(
  db: Db,
  prefix: string,
  options: { friendsOf?: string; notFriendsOf?: string; exclude?: string[]; offset: number; limit: number },
): Promise<string[]> {
  const parts: RawBuilder<unknown>[] = [prefixCondition('u.username_key', prefix)];
  if (options.friendsOf) {
    parts.push(
      sql`exists (select 1 from friends fr where fr.user_uuid = ${options.friendsOf} and fr.friend_uuid = u.uuid)`,
    );
  }
  if (options.notFriendsOf) {
    parts.push(
      sql`not exists (select 1 from friends fr where fr.user_uuid = ${options.notFriendsOf} and fr.friend_uuid = u.uuid)`,
    );
  }
  if (options.exclude && options.exclude.length > 0)
    parts.push(sql`u.uuid not in (${sql.join(options.exclude)})`);
  // Prepared on PostgreSQL: an index range in username order, whatever the prefix (prefixCondition).
  const r = await sql<{
    uuid: string;
  }>`select ${PREPARED} u.uuid from users u where ${sql.join(parts, sql` and `)}
    order by u.username_key asc limit ${options.limit} offset ${options.offset}`.execute(db);
  return r.rows.map((row) => row.uuid);
}

/**
 * Hashtags visible to `viewer` (tagVisibleTo) whose key starts with `prefix`: the exact key first, then the most
 * used, then by key.
 */
export async function findHashtagsByPrefix(
  db: Db,
  viewer: string | null,
  prefix: string,
  order: { column: 'relevance' | 'created_at' | 'updated_at'; direction: 'asc' | 'desc' },
  offset: number,
  limit: number,
): Promise<string[]> {
  const dir = sql.raw(order.direction === 'asc' ? 'asc' : 'desc');
  const orderBy =
    order.column === 'relevance'
      ? sql`case when t.name_key = ${prefix} then 0 else 1 end asc, t.associations_count desc, t.name_key asc, t.uuid asc`
      : sql`${sql.ref(`t.${order.column}`)} ${dir}, t.uuid ${dir}`;
  // Prepared on PostgreSQL: one index range and a sort whatever the prefix and the viewer, where planning the
  // visibility's five probes cost 60 times their run.
  const r = await sql<{ uuid: string }>`select ${PREPARED} t.uuid from tags t
    where t.tag_type = 'hashtag' and ${prefixCondition('t.name_key', prefix)}
      and ${tagVisibleTo(viewer, 't')}
    order by ${orderBy} limit ${limit} offset ${offset}`.execute(db);
  return r.rows.map((row) => row.uuid);
}

/** Rows of one kind's base table by uuid. */
export async function findRowsByUuids(db: Db, kind: DocKind | 'tag', uuids: string[]) {
  if (uuids.length === 0) return [];
  const table = kind === 'tag' ? 'tags' : DOC_TABLES[kind];
  return db.selectFrom(table).selectAll().where('uuid', 'in', uuids).execute();
}

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
/** How long a second `search compact` waits between tries while another builds the index of recent documents. */
const LOCK_RETRY_MS = 100;

/**
 * Where the index of recent documents starts: a window (`span` ids) and a quarter of one below the newest document
 * other than a message. The quarter keeps a window whose kinds end a little lower (a `/search/types` column; the
 * seeded world's media come after its posts) above the bound. Two windows, as first built, left half the index below
 * any window, and a search read and rejected those rows: `with` 19-23 ms for its window, 6-12 ms with this bound
 * (docs/search.md, "The index of recent documents (PostgreSQL)").
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
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
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
  // Ids only grow, but for `search reindex`, which numbers the documents from 1 again (and forgets the bound).
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
 * each FTS5 table's segments step by step into one until no step finds work (FTS5 reports work as two or more
 * changes counted on the connection) or MAX_MERGE_STEPS: the first step (a negative `merge`) puts every segment on
 * one level and starts merging it, the next ones continue that merge (`usermerge` 2 then lets a step merge any two
 * segments of a level). Segments the API commits meanwhile stay beside the merged one (merged with each other, two
 * of a level at a time), their deletion markers until the next compaction. PostgreSQL: moves the index of recent
 * documents up (refreshRecentIndex, by `recentSpan` ids), then vacuums and analyzes the index tables with their
 * indexes' dead entries (vacuumWithIndexes), which also empties the GIN pending list. Returns the merge steps
 * taken (0 on PostgreSQL).
 */
export async function compactIndex(db: Db, dialect: Dialect, recentSpan: number): Promise<number> {
  if (dialect === 'postgres') {
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
 * meaningful, names of users, networks and hashtags, and on SQLite the FTS5 structures from scratch. Runs in the
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
    await sql.raw(`insert into search_fts(search_fts) values ('rebuild')`).execute(db);
    await sql.raw(`insert into search_fts_en(search_fts_en) values ('rebuild')`).execute(db);
    await sql.raw(`insert into search_names_tri(search_names_tri) values ('rebuild')`).execute(db);
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
    await sql.raw(`insert into search_fts(search_fts) values ('optimize')`).execute(db);
    await sql.raw(`insert into search_fts_en(search_fts_en) values ('optimize')`).execute(db);
    await setFtsHashSize(db, FTS5_DEFAULT_HASH_BYTES);
  }
  const docs = await sql<{ n: number }>`select count(*) as n from search_docs`.execute(db);
  const names = await sql<{ n: number }>`select count(*) as n from search_names`.execute(db);
  return { docs: Number(docs.rows[0]?.n ?? 0), names: Number(names.rows[0]?.n ?? 0) };
}
