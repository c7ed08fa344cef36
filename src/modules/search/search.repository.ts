// The search index's shared vocabulary: its kinds, a caller's scope and a query's match as SQL conditions on both
// engines, and the plain lookups by uuid and order. The walks, counts, id ends, names and upkeep of the index each have
// a file of their own beside this one (search-*.repository.ts), all built from these pieces.
import { type RawBuilder, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { DOC_TABLES, PG_STEMMERS } from '../../db/migrations/0002-search.ts';
import { visibleTo } from '../connection/visibility.ts';
import {
  type FtsKinds,
  ftsMatch,
  ftsRestrictedMatch,
  isPrefixTerm,
  LONGEST_PREFIX_INDEX,
  partyToken,
  VISIBILITY_TOKEN_KINDS,
} from './search.query.ts';

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
  /** SQLite: the documents of each kind in the index (withKindDocs), which side of the FTS5 kind filter to name. */
  kindDocs?: ReadonlyMap<DocKind, number> | undefined;
}

/** Whether a scope names no kind but messages: a guest's then sees nothing, a signed-in caller's only their own. */
export function onlyMessages(scope: Pick<Scope, 'kinds'>): boolean {
  return scope.kinds.every((k) => k === 'messages');
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

/** Kinds whose documents are public whatever their source (SQLITE_DOC_SOURCES: users and networks). */
const PUBLIC_KINDS: readonly DocKind[] = ['user', 'network'];

/**
 * The scope as a condition on `search_docs d`: privacy is part of the query, never a filter afterwards. Walks stop at
 * a limit, so the friends test probes each row that needs it (visibleTo's `probe`); `probe` false for a statement
 * that tests every match (a full sort), where PostgreSQL's one hash of the viewer's friends is the cheaper plan.
 */
export function scopeCondition(scope: Scope, probe = true): RawBuilder<unknown> {
  // Every document has one of DOC_KINDS: the condition is left out when it would not narrow anything.
  const parts: RawBuilder<unknown>[] =
    scope.kinds.length < DOC_KINDS.length ? [sql`d.kind in (${sql.join([...scope.kinds])})`] : [];
  const visible = visibleTo(scope.viewer, 'd.owner_uuid', 'd.visibility', probe);
  parts.push(
    scope.viewer === null
      ? sql`${visible}`
      : sql`(${visible} or (d.visibility = 'message' and d.recipient_uuid = ${scope.viewer}))`,
  );
  const language = contentLanguage(scope);
  if (language) parts.push(sql`(d.kind in ('user', 'network') or d.language = ${language})`);
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
 * The scope as a filter inside the FTS5 index, on its kind column: the kinds (kindFilter), a guest's public documents
 * only, and the language's content (the scope tokens of migration 0030). A guest never sees a message, so a guest's
 * search leaves messages out inside the index: the newest-first walk then skips them without reading their rows (in
 * a world whose newest 50,000 documents were messages, "the" walked 3.7 ms instead of 0.7). The walks still
 * apply scopeCondition to every row they read; what the filter saves is the rows of documents out of scope.
 */
export function ftsKinds(scope: Scope): FtsKinds {
  const language = contentLanguage(scope);
  if (scope.viewer === null) {
    const kinds = scope.kinds.filter((k) => k !== 'messages');
    const publicOnly = kinds.some((k) => !PUBLIC_KINDS.includes(k));
    return { ...kindFilter(kinds, scope.kindDocs), publicOnly, language };
  }
  // A signed-in caller sees the messages they are a party of: the index keeps those alone (migration 0020).
  return { ...kindFilter(scope.kinds, scope.kindDocs), party: partyToken(scope.viewer), language };
}

/** The language the scope limits its content to, when it searches any content. */
export function contentLanguage(scope: Scope): string | undefined {
  return scope.language && scope.kinds.some((k) => CONTENT_KINDS.includes(k)) ? scope.language : undefined;
}

/**
 * Kinds as an FTS5 column filter: every document has one kind, so `kind : (a OR b)` and `NOT kind : (c OR d)` over
 * the other kinds keep the same documents, and the filter names the side that costs less to read. As a rule the side
 * with fewer tokens: each token of a positive OR is a doclist FTS5 reads in full, bounds or not (`kind : (user OR
 * network OR post OR comment OR media)` cost 2.1 ms per count of `love` on the 1,000,000-post world, `NOT kind :
 * messages` 0.06 ms). One kind is a single token, and there the documents decide when they are known (`kindDocs`,
 * Scope.kindDocs): FTS5 steps through the filter's doclist to each match, and a dense one costs most. Posts, 69% of a
 * seeded world's documents: the deepest page of 20 prefixes in the posts alone took 127 ms in all as `kind :
 * ("post")` and 90 ms as `NOT` the five other kinds, the same ids; comments, 21%, 54 against 104 ms the other way
 * (docs/search.md, "The kind filter by the documents (SQLite)").
 */
export function kindFilter(kinds: readonly DocKind[], kindDocs?: ReadonlyMap<DocKind, number>): FtsKinds {
  if (kinds.length >= DOC_KINDS.length) return {};
  const others = DOC_KINDS.filter((k) => !kinds.includes(k));
  const [kind] = kinds;
  if (kindDocs && kinds.length === 1 && kind !== undefined) {
    const kept = kindDocs.get(kind) ?? 0;
    const left = others.reduce((n, k) => n + (kindDocs.get(k) ?? 0), 0);
    return left < kept ? { except: others } : { only: kinds };
  }
  return others.length < kinds.length ? { except: others } : { only: kinds };
}

/** The FTS5 MATCH text of a match (ftsMatch), with its long last word's expansion when it has one. */
export function matchText(match: Match, kinds: FtsKinds, lastPrefix = true): string {
  return ftsMatch(match.terms, kinds, lastPrefix, match.prefixWords);
}

/**
 * The FTS5 MATCH text of the friends-only and private documents of a match in the scope's kinds, whatever their
 * language (ftsRestrictedMatch), for a walk whose id range is `bounded` by the page's other matches or not.
 */
export function restrictedMatchText(match: Match, scope: Scope, bounded: boolean, lastPrefix = true): string {
  return ftsRestrictedMatch(match.terms, scope.kinds, bounded, lastPrefix, match.prefixWords);
}

/**
 * Whether the FTS5 filter of the scope (ftsKinds) is the whole scope, so a walk may skip matches without reading
 * their rows: for a guest (kinds, public documents, language), or for anyone when only users and networks are
 * searched (public for everybody), unless excluded users or a friends-only search narrow it further. The walk still
 * applies the scope to the rows it returns.
 */
export function ftsHoldsScope(scope: Scope): boolean {
  return (
    (scope.viewer === null || scope.kinds.every((k) => PUBLIC_KINDS.includes(k))) && !narrowedByUsers(scope)
  );
}

/** Whether the scope leaves users out or keeps only some (excluded users, a friends-only search): no token holds that. */
function narrowedByUsers(scope: Scope): boolean {
  return (scope.excludeUuids ?? []).length > 0 || scope.friendsOf !== undefined;
}

/**
 * Whether the FTS5 filter of the scope (ftsKinds) decides every match but the friends-only and private posts,
 * comments and media: for a signed-in caller searching any of those kinds (their messages are decided by the party
 * tokens, users and networks are public), unless excluded users or a friends-only search narrow it further. Those
 * matches alone then need their rows to be judged (restrictedApartIds in search-walk.repository.ts).
 */
export function ftsDecidesAllButRestricted(scope: Scope): boolean {
  return (
    scope.viewer !== null &&
    scope.kinds.some((k) => VISIBILITY_TOKEN_KINDS.includes(k)) &&
    !narrowedByUsers(scope)
  );
}

/** The FTS5 tables a match runs on: the English-stemmed one (whole words) besides the plain one for English. */
export function ftsTables(match: Match): { table: 'search_fts' | 'search_fts_en'; lastPrefix: boolean }[] {
  const plain = { table: 'search_fts' as const, lastPrefix: true };
  return match.stem === 'en' ? [plain, { table: 'search_fts_en', lastPrefix: false }] : [plain];
}

/** A tsquery lexeme no document holds: the parser splits text at blanks, so no indexed lexeme contains one. */
const NO_DOCUMENT = "' no document'";

/**
 * The tsquery of a match: all words as typed with the last as a prefix, or (with a stemming language) all words
 * stemmed as whole words; the same two alternatives as the two FTS5 tables on SQLite.
 */
export function tsquery(match: Match, weighted = true): RawBuilder<unknown> {
  // Plain lexemes carry weight A, stemmed ones B (migration 0005): words as typed match plain lexemes only. Without
  // the weights the query matches a superset, which an index without weights answers without rechecking each row.
  const weight = weighted ? 'A' : '';
  const suffix = (i: number) => (isPrefixTerm(match.terms, i) ? ':*' : ':') + weight;
  // A long last word as the indexed words it starts (expandPrefix), which GIN reads as it reads any word.
  const plainTerm = (t: string, i: number) =>
    isExpandedPrefix(match, i)
      ? (match.prefixWords ?? []).map((w) => `'${w}':${weight}`).join(' | ')
      : `'${t}'${suffix(i)}`;
  // A word PostgreSQL's parser makes no lexeme of (a character it does not count as a letter or digit, such as ❶, or
  // over its 2,047-byte limit) gave an empty tsquery, which && drops: the other words alone then matched. Every word
  // must match, so such a word becomes one no document holds (a lexeme with a blank, which the parser never writes),
  // as typed and stemmed alike: the stemming configurations have no stop words (migration 0002), so an empty tsquery
  // there has the same cause.
  const termQuery = (config: string, text: string) =>
    sql`coalesce(nullif(to_tsquery(${config}::regconfig, ${text}), ''::tsquery), ${NO_DOCUMENT}::tsquery)`;
  const all = (config: string, plain: boolean) =>
    sql.join(
      match.terms.map((t, i) => termQuery(config, plain ? plainTerm(t, i) : `'${t}'`)),
      sql` && `,
    );
  const stemmer = match.stem ? PG_STEMMERS[match.stem] : undefined;
  if (!stemmer) return sql`(${all('simple', true)})`;
  return sql`((${all('simple', true)}) || (${all(`search_${stemmer}`, false)}))`;
}

/** Whether term `i` of a match is its last, a prefix that tsquery writes as the indexed words it starts. */
export function isExpandedPrefix(match: Match, i: number): boolean {
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

/** A walk's row as a Candidate (ids as numbers, text as null where not read). */
export function toCandidate(r: CandidateRow): Candidate {
  return {
    id: Number(r.id),
    kind: r.kind as DocKind,
    uuid: r.uuid,
    title: r.title ?? null,
    body: r.body ?? null,
    ...(typeof r.stats === 'string' ? { stats: r.stats } : {}),
  };
}

/** `and COLUMN < beforeId and COLUMN > afterId`, each only when given; `value` binds the ids (SQLite rowids). */
export function idBounds(
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
export function walkColumns(withText: boolean | undefined, terms?: readonly string[]): RawBuilder<unknown> {
  if (!withText) return sql`d.id, d.kind, d.uuid`;
  if (terms === undefined) return sql`d.id, d.kind, d.uuid, d.title, d.body`;
  return sql`d.id, d.kind, d.uuid, search_stats(${terms.join(' ')}, d.title, d.body) as stats`;
}

/** A walk's row as either engine returns it. */
export type CandidateRow = {
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
export function rowidValue(id: number): bigint {
  return BigInt(Math.trunc(id));
}

/**
 * The kinds whose newest documents measure a search (its recent window, its commonness, a deep walk's density): the
 * kinds besides messages when there are any, for a guest (who sees no message) and a signed-in caller alike (who
 * sees only their own, walked apart: pgMessagesApart); messages alone for a signed-in caller; none for a guest.
 */
export function sampledKinds(scope: Scope): readonly DocKind[] {
  const others = scope.kinds.filter((k) => k !== 'messages');
  return others.length > 0 || scope.viewer === null ? others : scope.kinds;
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
  if (scope.viewer === null && onlyMessages(scope)) return [];
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
export function prefixCondition(column: string, prefix: string): RawBuilder<unknown> {
  const ref = sql.ref(column);
  return sql`${ref} >= ${prefix} and ${ref} < ${`${prefix}\u{10FFFF}`}`;
}

/**
 * Comments with their post's audience (`post_visibility`, `post_owner`; null when the post is gone), read in the
 * statement that reads their text, so a page checks who may see a comment as of that text.
 */
function commentsWithAudience(db: Db) {
  return db
    .selectFrom('comments as c')
    .leftJoin('posts as p', 'p.uuid', 'c.post_uuid')
    .selectAll('c')
    .select(['p.visibility as post_visibility', 'p.user_uuid as post_owner']);
}

/** Rows of one kind's base table by uuid (comments with their post's audience: commentsWithAudience). */
export async function findRowsByUuids(db: Db, kind: DocKind | 'tag', uuids: string[]) {
  if (uuids.length === 0) return [];
  if (kind === 'comment') return commentsWithAudience(db).where('c.uuid', 'in', uuids).execute();
  const table = kind === 'tag' ? 'tags' : DOC_TABLES[kind];
  return db.selectFrom(table).selectAll().where('uuid', 'in', uuids).execute();
}

/**
 * findRowsByUuids on PostgreSQL, the uuids as one array parameter: one statement text, prepared once, for any number
 * of them (a list of parameters made a text, and a prepared statement of the process's few, per count).
 */
export async function findRowsByUuidsPg(db: Db, kind: DocKind, uuids: string[]) {
  if (uuids.length === 0) return [];
  if (kind === 'comment')
    return commentsWithAudience(db).where('c.uuid', '=', sql<string>`any(${uuids})`).execute();
  return db.selectFrom(DOC_TABLES[kind]).selectAll().where('uuid', '=', sql<string>`any(${uuids})`).execute();
}
