// Counts of a query's matches in bounded id ranges: how common the words are among the newest documents and across
// the index, which choose a search's plan (search-ranking.service.ts) and a deep page's split. Each count is capped, so
// none costs more than the walk it saves.
import { sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { isPrefixTerm } from './search.query.ts';
import {
  DOC_KINDS,
  type DocKind,
  ftsDecidesAllButRestricted,
  ftsHoldsScope,
  ftsKinds,
  ftsTables,
  isExpandedPrefix,
  kindFilter,
  type Match,
  matchText,
  onlyMessages,
  rowidValue,
  type Scope,
  sampledKinds,
  scopeCondition,
  tsquery,
} from './search.repository.ts';
import { docIdRange } from './search-ends.repository.ts';
import { hasKindGin, messageWalkTuning, pgWalkQuery } from './search-walk.repository.ts';

/**
 * The samples that estimate a query's density for a deep walk (PostgreSQL): the newest `densitySample` ids of the
 * searched kinds and `spreadRanges` ranges of `spreadRangeIds` ids spread below them.
 */
export const deepWalkTuning = { densitySample: 2000, spreadRanges: 4, spreadRangeIds: 500 };
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
  // Sampled with others' messages (a block of them: once a seeded world's newest 50,000 ids), a signed-in caller's
  // one or two own messages among 2,000 ids gave a density so low that the split fell to the first id, and the walk
  // read every match through GIN (sampledKinds).
  const kinds = sampledKinds(scope);
  if (kinds.length === 0) return undefined;
  const { last } = await docIdRange(db, dialect, kinds);
  const top = Math.min(range.top, last);
  const { densitySample, spreadRanges, spreadRangeIds } = deepWalkTuning;
  // The matches in scope in a range, read in id order (ts_match_vq: never the GIN index); a caller's messages
  // through their sides, of which a range of a few thousand ids holds at most that many (unless tests turn it off).
  const partyWalk = messageWalkTuning.fewMessages > 0;
  const inScope = (afterId: number, toId: number) =>
    sql`(select count(*) from (${pgWalkQuery(
      match,
      { ...scope, kinds },
      { direction: 'desc', afterId, beforeId: toId + 1, forceWalk: true, partyWalk },
    )}) s)`;
  // The walk reaches far below the newest ids (hundreds of thousands for a three-letter prefix), so ranges spread
  // below them join the sample, asked in the same statement: the newest alone may be one kind (5,000 media in the
  // seeded world before its index was built in creation order), whose density put up to 2.15 times the needed matches
  // in the first range (docs/search.md, "Deep pages"). None among the newest ids: a block of new documents without
  // the words (one author's burst) says nothing of the rest of the index, where an unbounded walk would read every
  // match through GIN; the spread ranges alone then give the density, as for the ranking (countNewestAndSpread).
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
 * friends of a friends-only search, and on SQLite the documents matching the words that the FTS5 filter keeps (the
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
  if (scope.viewer === null && onlyMessages(scope)) return false;
  if (kinds.length < DOC_KINDS.length && !surelyMoreDocs(scope, n)) {
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
  // Where the FTS5 filter is the scope (ftsHoldsScope), the walk reads the same doclists and no row either: counting
  // them first would double its cost. So it would where the filter decides all but the friends-only and private
  // matches (ftsDecidesAllButRestricted) and posts, most of the index, are searched: the walk reads the others without
  // rows too, and its check of those few spares the count's 2-4 ms on every deep page. In a sparser kind (a column of
  // `/search/types`) the decided matches often fall short of the page, and the walk would then step through the
  // kind's restricted matches in the whole index: 8-18 ms for comments, where the count most often finds too few.
  // (ftsRestrictedMatch in search.query.ts leads its walk by the kinds' tokens there.) Where posts are searched, an
  // offset past every match walks the word's restricted matches in the whole index instead of being counted.
  if (
    dialect === 'postgres' ||
    ftsHoldsScope(scope) ||
    (ftsDecidesAllButRestricted(scope) && kinds.includes('post'))
  ) {
    return true;
  }
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
 * Whether the documents of the scope's kinds, as counted per app (Scope.kindDocs), are more than twice `n + 1`: so
 * many that counting them again up to n + 1 in a range of every id of the kinds (about 0.5 ms for 10,000 posts) would
 * find more than n. A narrower range, or deletes since the count, may hold fewer; the walk then finds the page empty,
 * so leaving the count out costs speed at worst, never an item.
 */
function surelyMoreDocs(scope: Scope, n: number): boolean {
  // A guest sees no message, so messages do not count for a guest.
  const seen = scope.kinds.filter((k) => scope.viewer !== null || k !== 'messages');
  const counted = seen.reduce((sum, k) => sum + (scope.kindDocs?.get(k) ?? 0), 0);
  return counted > 2 * (n + 1);
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
  // alone does not decide, as a walk without text does; where the index's own filter is the scope (ftsHoldsScope), it
  // alone counts.
  const r =
    counted && !ftsHoldsScope(counted)
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
