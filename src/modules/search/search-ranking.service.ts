// The ranking plan of a search: which of a query's matches are ranked by relevance and how they are read, from the
// query's density among the newest documents (docs/search.md, "Ranking design" and "Speed"). search.service.ts asks it
// for a page of document references and turns them into items.
import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import type { Window } from '../../http/paging.ts';
import { type Order, relevanceScores } from './search.query.ts';
import {
  type Candidate,
  type DocKind,
  type DocOrder,
  type DocRef,
  findMatchesOrdered,
  type Match,
  type Scope,
  sampledKinds,
} from './search.repository.ts';
import {
  countMatchesIn,
  countNewestAndSpread,
  deepWalkSplit,
  mayHaveMoreThan,
  spreadIdRanges,
} from './search-density.repository.ts';
import { docIdRanges, newestIdBelow } from './search-ends.repository.ts';
import { rankingDocIdRanges } from './search-ends.service.ts';
import {
  fewDocsOfKind,
  findMatchesById,
  hasKindGin,
  hasPreviewGin,
  type IdWalk,
  merged,
} from './search-walk.repository.ts';
import type { StatsFreshness } from './search-word-stats.repository.ts';
import {
  matchShareByStatistics,
  prefixEntryShareByStatistics,
  rareByStatistics,
  wordShareByStatistics,
} from './search-word-stats.service.ts';

/**
 * Most of the newest matches ranked by relevance (the rest follow newest first), how many of the newest documents
 * make the recent window of the ranking, and on PostgreSQL how many ids the first chunk of the walk below that
 * window spans (each next chunk twice as many), how many of a chunk's newest ids tell whether it is dense with the
 * words (see DENSE), and how many ranges of how many ids, spread over the whole index, tell whether the words are
 * common when the newest ids say they are not (0 ranges: never asked); see docs/search.md, "Speed". On PostgreSQL,
 * a query whose matches the statistics of the last ANALYZE put at `statsRareMatches` at most, while at most
 * `statsChangedRows` rows changed since, is read through GIN before those counts, which it then answers (0: never;
 * docs/search.md, "Rare words by the statistics"); a word they put in at least `statsDenseShare` of the documents,
 * with as few rows changed, has its newest matches of the recent window read before them when denseHeadPlan gives a
 * plan, and those answer them too (0: never; "Dense words by the statistics"). A media preview of a query they put in
 * less than `statsPreviewGinShare` of the documents, with as few rows changed, is read through the media's own GIN
 * index (0: never; previewViaKindGin). A mutable object so tests can shrink them.
 */
export const searchTuning = {
  rankedCandidates: 1000,
  recentDocs: 30_000,
  olderChunk: 100_000,
  densitySample: 2000,
  spreadRanges: 4,
  spreadRangeIds: 250,
  statsRareMatches: 1000,
  statsChangedRows: 10_000,
  statsDenseShare: 0.01,
  statsPreviewGinShare: 0.08,
};
/**
 * A query is common when at least one in COMMON_SPAN of the newest documents (of the searched kinds, counting only
 * those the caller may see: the count decides what they see ranked) matches it: then only its newest
 * `rankedCandidates / 5` matches in scope are ranked.
 */
export const COMMON_SPAN = 10;
/**
 * PostgreSQL: ids are walked in order where at least one in DENSE of them matches the words (whoever may see them).
 * Reading a common prefix's GIN entries costs about 1.4 µs each over the whole index (41 ms for the 28,819 of
 * "love"), walking ids in order about 0.6 µs each: walking 30,000 ids wins once the words match 1% of the world.
 */
const DENSE = 100;
/**
 * PostgreSQL: a dense word read before its count goes through the index of recent documents only when its share by the
 * statistics is more than this factor short of common (COMMON_SPAN; denseHeadPlan). That index is read whole above its
 * bound, matches past the limit included, so a share too low (a prefix whose lexemes the list left out) costs
 * entries: twice too low, the read is still of a word at most one document in COMMON_SPAN. On the seeded world the
 * listed shares of six prefixes were 0.8-1.4 times their density among the newest 30,000 documents (`lov` 1.66%
 * against 2.10%, `mus` 3.64% against 3.07%); at 4, `mus` walked its window in id order instead of reading the index,
 * and served a third fewer searches.
 */
const DENSE_HINT_MARGIN = 2;
/** The two costs above, in µs: a GIN entry read with its row, and a row walked in id order. */
const GIN_ENTRY_US = 1.4;
const WALK_ROW_US = 0.6;

/**
 * PostgreSQL, one kind with a GIN index of its own (comments, users) whose newest documents are dense with the words:
 * whether reading every match of the kind through that index costs less than walking the recent window in id order,
 * by the costs above (about 1.4 µs per GIN entry with its row, 0.6 µs per row walked). The newest range's count gives
 * the density: its matches per id estimate the kind's matches over all its ids, its matches per document of the kind
 * how far the walk goes for `most` of them. `ann` in users matched 3,465 of 100,000: the index read them in 4.7 ms
 * where the walk of the newest 30,000 users took 18 ms (docs/search.md, "Dense words in one kind on PostgreSQL").
 */
export function kindIndexCheaper(d: {
  newest: number;
  spanDocs: number;
  spanIds: number;
  kindIds: number;
  windowIds: number;
  most: number;
}): boolean {
  if (d.newest <= 0 || d.spanDocs <= 0 || d.spanIds <= 0) return false;
  const entries = (d.newest / d.spanIds) * d.kindIds;
  const walked = Math.min((d.spanDocs / d.spanIds) * d.windowIds, (d.most * d.spanDocs) / d.newest);
  return entries * GIN_ENTRY_US < walked * WALK_ROW_US;
}
/**
 * An entry of the index of recent documents, as estimated from the density in the caller's scope, costs about as much
 * as this many rows walked in id order. The index also holds the documents the caller may not see and every word the
 * last word starts, so a word has more entries than the estimate (`it:*`: 4,640 against 3,056), and the index's read
 * keeps every match of the window and sorts them, where the walk stops at its limit. Fitted on 16 words of the seeded
 * world (`explain analyze`, 7 runs each, the guest's statements): the walk cost less from `was` (96 of the newest
 * 2,000 match: 5.0 against 7.4 ms) up, the index up to `they` (64: 5.1 against 8.2 ms), `are` (86) about even. 12
 * puts the change at 94 for a freshly moved index (37,500 ids), about 70 as it grows toward 67,500. A weight fitted
 * on `love` alone (4) sent `it`, `he` or `on` through the index at twice their walk's cost.
 */
const RECENT_ENTRY_ROWS = 12;

/**
 * PostgreSQL, one word the recent window is walked for (dense enough among its newest documents): whether reading its
 * entries in the index of recent documents (every document but messages above the index's bound, up to the newest
 * of the searched kinds: `indexIds` ids, documents the caller may not see included) costs less than walking the
 * window's rows in id order until `most` matches. The newest range's count (matches in the caller's scope) gives the
 * density. `love`, one match in 57 of the newest documents, had about 1,300 entries in an index of 60,000 ids (the
 * seeded world's before recentIndexTarget narrowed it); its walk reads all 30,000 rows of the window. A word in one
 * document of ten stops its walk after 10,000 rows, where such an index holds 6,000 entries.
 */
export function recentIndexCheaper(d: {
  newest: number;
  spanIds: number;
  indexIds: number;
  windowIds: number;
  most: number;
}): boolean {
  if (d.spanIds <= 0 || d.indexIds <= 0) return false;
  const density = Math.max(1, d.newest) / d.spanIds;
  const entries = density * d.indexIds;
  const walked = Math.min(d.windowIds, d.most / density);
  return entries * RECENT_ENTRY_ROWS < walked;
}
/**
 * SQLite, a query the newest range's count found sparse: whether the recent window is expected to hold fewer than a
 * quarter of `fewest` matches, its density taken from the count (at least one match, as a count of 0 may hide a few).
 * Then the window and the older ids are walked in one statement, not two: each FTS5 statement reads the words' whole
 * doclists before its first row, 1.2 ms for `coffee morning` on the seeded world, and such a window nearly always
 * leaves the rest to the older walk (docs/search.md, "Sparse queries in one walk (SQLite)"). A wrong guess costs
 * time, never the answer: the walk's newest matches are the same either way.
 */
export function recentWindowSparse(d: {
  newest: number;
  spanIds: number;
  windowIds: number;
  fewest: number;
}): boolean {
  if (d.spanIds <= 0) return false;
  return (Math.max(1, d.newest) / d.spanIds) * d.windowIds * 4 < d.fewest;
}
/**
 * PostgreSQL: whether the words look rare across the whole index. The matches counted among the newest ids and in
 * the ranges spread over the index (`countedIds` ids in all; none when the spread was not counted), scaled to every
 * id of the searched kinds (`allIds`), are at most `most`: reading every match through the GIN index is then one
 * short read, where the recent window, a density sample below it and the older walk were four more statements.
 * `ramidorum` (11 matches in 1,456,000 documents) fell in one spread range of the seeded world: 1 match in 3,000 ids
 * counted, about 470 estimated (docs/search.md, "Rare words everywhere").
 */
export function rareEverywhereEstimate(d: {
  newest: number;
  spread: number | null;
  countedIds: number;
  allIds: number;
  most: number;
}): boolean {
  if (d.spread === null) return false;
  const found = d.newest + d.spread;
  if (found === 0) return true;
  return d.countedIds > 0 && (found * d.allIds) / d.countedIds <= d.most;
}
/**
 * PostgreSQL, a one-word query the statistics put among the dense (exactDocs, "Dense words by the statistics"): how
 * many of the recent window's newest matches to read before any count, and whether through the index of recent
 * documents (`indexIds` ids above its bound, null when the window does not lie above it); undefined when the count
 * should decide. A word in one document of COMMON_SPAN or more is read up to a common query's `fewest`, in id order;
 * any other up to `most`, in id order, or through the index where recentIndexCheaper says it reads less by the share.
 * That index is read whole above its bound, past any limit, so it is taken only when it still reads less with every
 * row changed since the analysis counted as a match, and the word more than DENSE_HINT_MARGIN times short of common;
 * otherwise the count decides, as before, rather than an id-order walk replacing a read of the index.
 */
export function denseHeadPlan(d: {
  share: number;
  changedSince: number;
  fewest: number;
  most: number;
  spanIds: number;
  windowIds: number;
  indexIds: number | null;
}): { limit: number; viaIndex: boolean } | undefined {
  if (d.share * COMMON_SPAN >= 1) return { limit: d.fewest, viaIndex: false };
  const { indexIds } = d;
  const cheaper = (share: number) =>
    indexIds !== null &&
    recentIndexCheaper({
      newest: share * d.spanIds,
      spanIds: d.spanIds,
      indexIds,
      windowIds: d.windowIds,
      most: d.most,
    });
  if (!cheaper(d.share)) return { limit: d.most, viaIndex: false };
  const worst = d.share + d.changedSince / (indexIds as number);
  if (d.share * COMMON_SPAN * DENSE_HINT_MARGIN < 1 && cheaper(worst))
    return { limit: d.most, viaIndex: true };
  return undefined;
}

/**
 * The count of the newest range (ids in (`afterId`, `toId`], documents of `kinds`, up to `cap`) taken from a read of
 * the newest `most` matches in scope, newest first: exact when the read holds every match of the range (it ended
 * before `most`, or its oldest match is at or below the range), or when the range's matches reach the cap anyway;
 * null when the read stopped inside the range short of the cap (the caller's own messages filled it).
 */
export function newestCountOf(
  read: readonly DocRef[],
  range: { afterId: number; toId: number; cap: number },
  kinds: readonly string[],
  most: number,
): number | null {
  const inRange = read.filter(
    (c) => c.id > range.afterId && c.id <= range.toId && kinds.includes(c.kind),
  ).length;
  if (inRange >= range.cap) return range.cap;
  const covered = read.length < most || (read.at(-1)?.id ?? 0) <= range.afterId;
  return covered ? inRange : null;
}
/**
 * The exact matches of a window. Relevance is bounded (docs/search.md, "Speed"): a few hundred of the newest
 * matches are found by walking the index in id order (no scoring) and ranked here from their text (on SQLite from
 * its statistics, computed on the reader thread); older matches follow, newest first. created_at is the index order
 * itself; updated_at, username and karma sort every match.
 */
export async function exactDocs(
  ctx: Context,
  match: Match,
  scope: Scope,
  order: Order,
  window: Window,
  most = searchTuning.rankedCandidates,
): Promise<DocRef[]> {
  // Reads outside any transaction: on SQLite they run on the reader threads, off the event loop.
  const { readDb: db, dialect } = ctx;
  if (order.property !== 'relevance' && order.property !== 'created_at') {
    const column = order.property as DocOrder['column'];
    const ordered = { column, direction: order.direction };
    return findMatchesOrdered(db, dialect, match, scope, ordered, window.offset, window.limit);
  }
  // Messages are seen by their two sides only: the newest ids of the world are often messages, and counting them made
  // a common word look rare (docs/search.md, "Uncached common words on PostgreSQL"). The recent window and the
  // commonness count leave them out when other kinds are searched, for a guest (who sees none) and for a signed-in
  // caller alike; the caller's own messages are still walked, in every range, up to the newest (`last`).
  const kinds = sampledKinds(scope);
  if (kinds.length === 0) return [];
  const mine = scope.viewer !== null && kinds.length < scope.kinds.length;
  const kindSets = mine ? [kinds, scope.kinds] : [kinds];
  const ends =
    dialect === 'postgres'
      ? await rankingDocIdRanges(db, kindSets)
      : await docIdRanges(db, dialect, kindSets);
  const [ofOthers, ofAll] = ends.ranges;
  const { first: firstOther, last: top } = ofOthers as { first: number; last: number };
  const { first, last } = ofAll ?? { first: firstOther, last: top };
  // The recent window: the ids (recent, last], its documents other than messages among the ids (recent, top];
  // older documents exist only if recent >= first.
  const recent = top - searchTuning.recentDocs;
  const otherKinds = mine ? { first: firstOther, last: top } : undefined;
  // PostgreSQL, a signed-in caller's messages: the entries the index of their words would read for a prefix, from the
  // statistics, choose how they are read (IdWalk.prefixShare); never which.
  const prefixShare =
    dialect === 'postgres' && scope.viewer !== null && scope.kinds.includes('messages')
      ? ((await prefixEntryShareByStatistics(db, match, ends.stats, searchTuning.statsChangedRows)) ??
        undefined)
      : undefined;
  if (order.property === 'created_at') {
    return refsOf(
      await findMatchesById(db, dialect, match, scope, {
        direction: order.direction,
        afterId: first - 1,
        beforeId: last + 1,
        walkAbove: recent,
        otherKinds,
        prefixShare,
        ...window,
      }),
    );
  }
  if (window.offset >= most) {
    // Past every ranked candidate: they are at most `most` and always the newest matches in scope (a prefix of the
    // walk newest first, only reordered), so the page is the walk's own, found without counting, reading or
    // scoring any candidate (docs/search.md, "Deep pages"). A page past every document of the kinds, or past every
    // match whoever may see it, is empty without the walk, which checks the scope of each match it skips.
    const range = { afterId: first - 1, beforeId: last + 1 };
    if (!(await mayHaveMoreThan(db, dialect, match, scope, range, window.offset))) return [];
    const need = window.offset + window.limit;
    const split = await deepWalkSplit(db, dialect, match, scope, { first, top: last }, need);
    return refsOf(
      await findMatchesById(db, dialect, match, scope, {
        direction: 'desc',
        ...range,
        walkAbove: split?.walkAbove ?? recent,
        forceWalk: split?.forceWalk,
        forward: true,
        otherKinds,
        prefixShare,
        ...window,
      }),
    );
  }
  // `onlyKinds`: the other kinds alone, without the caller's messages.
  const walk = (
    limit: number,
    range: {
      beforeId?: number;
      afterId?: number;
      forceWalk?: boolean;
      ginFirst?: boolean;
      walkAbove?: number | undefined;
      recentIndex?: number | undefined;
      otherKinds?: { first: number; last: number } | undefined;
    },
    onlyKinds?: readonly DocKind[],
  ) =>
    findMatchesById(db, dialect, match, onlyKinds ? { ...scope, kinds: onlyKinds } : scope, {
      direction: 'desc',
      walkAbove: recent,
      withText: true,
      otherKinds,
      prefixShare,
      offset: 0,
      limit,
      ...range,
    });
  // PostgreSQL: whether the words are dense (one id in DENSE) across the whole index, asked with the newest count
  // when that count is sparse. Walking ids in order is then cheaper than reading every match through the GIN index,
  // whatever sits at the top: after one author's 10,000 posts without "love", the GIN plans read all 28,819 of its
  // matches twice (300 ms as that author; docs/search.md, "Common words under a block of new posts").
  // It stands for the first chunk below the recent window only; later chunks sample their own newest ids, so a
  // cluster of matches in one sampled range cannot send a word rare elsewhere down a walk of the whole index.
  let widelyDense = false;
  // PostgreSQL: the newest `limit` matches with ids in [lowest, highest], newest first (docs/search.md, "Uncached
  // common words on PostgreSQL"). One query over every older id made the planner read and recheck every match of a
  // common word (28,819 heap rows, 25,000 blocks, 430-770 ms for "love"), though the first 100,000 ids below the
  // recent window hold enough of them. While the newest ids left are dense with the words, a chunk of them is walked
  // in id order and stops at its limit; once they are sparse, one query over the rest is left to the planner's GIN
  // plans (GIN plans bounded to a chunk intersect the primary key's ids of each chunk: 80 ms for 400,000 ids).
  const olderInChunks = async (limit: number, lowest: number, highest: number) => {
    let found: Candidate[] = [];
    let hi = highest + 1;
    const { olderChunk, densitySample } = searchTuning;
    const enough = Math.max(1, Math.ceil(densitySample / DENSE));
    for (let size = olderChunk, chunk = 0; found.length < limit && hi > lowest; size *= 2, chunk++) {
      // The walk goes on below the newest document it could keep, the caller's own messages included
      // (pgMessagesApart walks them apart). The sample and the chunk start at the newest document of the sampled
      // kinds: ids just below may all be others' messages (a block of them, as in the seeded world
      // before its index was built in creation order), which made a common
      // word look rare there and sent the rest to the GIN plan (`love` as bench_user: every one of its 28,819 matches
      // read and sorted, 130 ms), also when one of the caller's own messages lay inside that block
      // (docs/search.md, "The older walk below a block of messages (PostgreSQL)").
      const below = await newestIdBelow(db, dialect, kinds, mine ? scope.viewer : null, hi);
      hi = Math.min(hi, below.withMine + 1);
      if (hi <= lowest) break;
      // Never above `hi`: `withMine` is at least `ofKinds`, and both lie below the old `hi`.
      const othersEnd = below.ofKinds + 1;
      const sample = { afterId: Math.max(lowest - 1, othersEnd - 1 - densitySample), toId: othersEnd - 1 };
      const dense =
        (chunk === 0 && widelyDense) ||
        (await countMatchesIn(db, dialect, match, kinds, sample, enough)) >= enough;
      const lo = dense ? Math.max(lowest - 1, othersEnd - 1 - size) : lowest - 1;
      const forceWalk = lo >= lowest;
      // Sparse, one kind with a GIN index of its own (comments, users): every match of the kind, then the sort, not
      // a backward walk across the other kinds' ids to the limit (docs/search.md, "Rare words in one kind").
      const ginFirst = !dense && hasKindGin(kinds);
      // The other kinds end below `othersEnd`: their walk does not cross the block above it.
      const othersBound = mine ? { otherKinds: { first: firstOther, last: othersEnd - 1 } } : {};
      found = found.concat(
        await walk(limit - found.length, { afterId: lo, beforeId: hi, forceWalk, ginFirst, ...othersBound }),
      );
      hi = lo + 1;
    }
    return found;
  };
  const fewest = Math.max(1, Math.ceil(searchTuning.rankedCandidates / 5));
  // Steps 2 and 3 cut from one walk of the newest `most` matches of any age: its matches above `recent` come first
  // and are step 2's; when they are fewer than `fewest`, the whole walk is step 2's and then step 3's.
  const windowAndOlder = (all: Candidate[]) => {
    const inRecent = all.filter((c) => c.id > recent);
    return {
      candidates: inRecent.length >= fewest ? inRecent : all,
      more: inRecent.length >= fewest || all.length === most,
    };
  };
  const windowAndOlderInOneWalk = async (range: Parameters<typeof walk>[1]) =>
    windowAndOlder(await walk(most, range));
  // The newest `most` matches of any age in one read: through the kind's own GIN index for one such kind, else
  // through the main one (PostgreSQL; in id order for a kind with few documents, fewDocsOfKind).
  const oneRead = {
    afterId: first - 1,
    beforeId: last + 1,
    walkAbove: undefined,
    ginFirst: hasKindGin(scope.kinds),
  };
  let candidates: Candidate[];
  let more = true;
  const span = { afterId: top - fewest * COMMON_SPAN, toId: top };
  let newest: number;
  // PostgreSQL: the matches counted among the newest documents and in the ranges spread over the index predict few
  // in all (rareEverywhereEstimate).
  let rareEverywhere = false;
  // PostgreSQL: the newest range predicts a sparse window (recentWindowSparse) and the spread ranges find the words
  // less than one id in DENSE elsewhere.
  let sparseThroughout = false;
  // PostgreSQL: the kind's own GIN index beats walking the recent window, though its newest documents are dense.
  let kindIndex = false;
  // PostgreSQL, a query rare by the statistics: its newest `most` matches, read before any count (docs/search.md,
  // "Rare words by the statistics"). The count of the newest range comes from them when they cover it, so the
  // candidates are the counted path's, whatever the statistics said; when they do not, the count runs as before,
  // and the plans that need those matches take them from this read.
  let read: Candidate[] | undefined;
  let readCount: number | null = null;
  const statsBounds = { most: searchTuning.statsRareMatches, changedMost: searchTuning.statsChangedRows };
  if (dialect === 'postgres' && most === fewest && (await onePlanPreview(db, scope, oneRead))) {
    // A preview of one kind with one plan: its newest `most` matches answer the count. The caller's messages are read
    // apart whatever `forceWalk` says (pgWalkQuery: through their sides when few, else the words and parties). Media
    // are walked in id order, or read through their own GIN index when the statistics find the words sparse: the same
    // newest `most` matches either way.
    const viaGin = await previewViaKindGin(db, match, scope, ends.stats);
    read = await walk(most, { ...oneRead, forceWalk: !viaGin, ginFirst: viaGin });
    readCount = newestCountOf(read, { ...span, cap: fewest }, kinds, most);
  } else if (dialect === 'postgres' && (await rareByStatistics(db, match, ends.stats, statsBounds))) {
    read = await walk(most, oneRead);
    readCount = newestCountOf(read, { ...span, cap: fewest }, kinds, most);
  }
  // PostgreSQL: the bound of the index of recent documents when reading it costs less than walking the window in id
  // order, for a count of the newest range and a forced walk; undefined otherwise.
  // The ids that index holds up to the newest document, when the window lies above its bound (null otherwise).
  const bound = ends.recentIndex;
  const indexIds = bound !== undefined && recent >= bound ? top - bound : null;
  const recentIndexFor = (newestCount: number, forceWalk: boolean) =>
    forceWalk &&
    match.terms.length === 1 &&
    indexIds !== null &&
    recentIndexCheaper({
      newest: newestCount,
      spanIds: span.toId - span.afterId,
      indexIds,
      windowIds: last - recent,
      most,
    })
      ? bound
      : undefined;
  // PostgreSQL, one word the statistics put in `statsDenseShare` of the documents or more, with at most
  // `statsChangedRows` rows changed since: the recent window's newest matches, read before any count when denseHeadPlan
  // gives a plan, which they then answer as `read` does (docs/search.md, "Dense words by the statistics"). Read
  // up to `fewest`, a word that is common has its candidates; one that is not has the window's walk go on below them,
  // planned from the count. The share only chooses the reads. A signed-in caller's own messages are read apart, as
  // every walk reads them (pgMessagesApart), so the count is taken from the other kinds' matches alone: in one read, a
  // caller with many messages holding a common word filled it with them.
  let head: Candidate[] | undefined;
  let headLimit = 0;
  // The caller's matching messages of the window, when the head's read of them ended short of its limit: all of them.
  let headOwn: Candidate[] | undefined;
  if (
    readCount === null &&
    read === undefined &&
    dialect === 'postgres' &&
    denseHintFits(scope, span, recent)
  ) {
    const { statsDenseShare, statsChangedRows } = searchTuning;
    const share =
      statsDenseShare > 0 ? await wordShareByStatistics(db, match, ends.stats, statsChangedRows) : null;
    const plan =
      share !== null && share >= statsDenseShare
        ? denseHeadPlan({
            share,
            changedSince: ends.stats?.changedSince ?? 0,
            fewest,
            most,
            spanIds: span.toId - span.afterId,
            windowIds: last - recent,
            indexIds,
          })
        : undefined;
    if (plan) {
      headLimit = plan.limit;
      const recentIndex = plan.viaIndex ? bound : undefined;
      const headWalk: IdWalk = {
        direction: 'desc',
        afterId: recent,
        withText: true,
        prefixShare,
        offset: 0,
        limit: headLimit,
      };
      // The other kinds' ids end at `top`: above it lie only messages (a block of them, at times).
      const [others, own] = await Promise.all([
        findMatchesById(
          db,
          dialect,
          match,
          { ...scope, kinds },
          { ...headWalk, beforeId: top + 1, forceWalk: true, recentIndex },
        ),
        mine
          ? findMatchesById(
              db,
              dialect,
              match,
              { ...scope, kinds: ['messages'] },
              { ...headWalk, beforeId: last + 1 },
            )
          : [],
      ]);
      // Never null: every match read is of the counted kinds, so a full read reaches the cap or below the range.
      readCount = newestCountOf(others, { ...span, cap: fewest }, kinds, headLimit);
      if (readCount !== null) head = merged(own, others, headWalk);
      if (mine && own.length < headLimit) headOwn = own;
    }
  }
  if (readCount !== null) {
    newest = readCount;
  } else if (dialect === 'postgres') {
    const spread = spreadIdRanges(
      firstOther,
      span.afterId,
      searchTuning.spreadRanges,
      searchTuning.spreadRangeIds,
    );
    const sampled = spread.length * searchTuning.spreadRangeIds;
    const counted = await countNewestAndSpread(
      db,
      match,
      { ...scope, kinds },
      { ...span, cap: fewest },
      spread,
      searchTuning.spreadRangeIds,
      Math.ceil((fewest * COMMON_SPAN) / DENSE),
      hasKindGin(scope.kinds),
    );
    newest = counted.newest;
    widelyDense = counted.spread !== null && counted.spread * DENSE >= sampled;
    // Without spread ranges (a world too small to spread them over) only a word the newest documents lack is rare:
    // the newest ids alone would stand for the whole index.
    rareEverywhere =
      spread.length === 0
        ? newest === 0
        : rareEverywhereEstimate({
            newest,
            spread: counted.spread,
            countedIds: span.toId - span.afterId + sampled,
            allIds: top - firstOther + 1,
            most,
          });
    sparseThroughout =
      spread.length > 0 &&
      counted.spread !== null &&
      !widelyDense &&
      recent >= first &&
      recentWindowSparse({ newest, spanIds: span.toId - span.afterId, windowIds: top - recent, fewest });
    // The documents are counted only when the newest range is dense, so never beside the spread ranges' sum.
    kindIndex =
      counted.docs !== null &&
      kindIndexCheaper({
        newest,
        spanDocs: counted.docs,
        spanIds: span.toId - span.afterId,
        kindIds: last - first + 1,
        windowIds: last - recent,
        most,
      });
  } else {
    newest = await countMatchesIn(db, dialect, match, kinds, span, fewest, scope);
  }
  if (newest >= fewest) {
    // 1. A common query (one of the newest documents in COMMON_SPAN or more matches): its newest `fewest`.
    // The newest `fewest` of a read that found them in the newest range are the newest of any age.
    const readFirst = read ?? head;
    candidates = readFirst
      ? readFirst.slice(0, fewest)
      : await walk(fewest, { afterId: first - 1, beforeId: last + 1, forceWalk: true });
  } else if (read && readCount !== null) {
    // 2 and 3 from the read (windowAndOlderInOneWalk).
    ({ candidates, more } = windowAndOlder(read));
  } else {
    // 2. Otherwise up to `most` matches among the recent documents, if that gives at least `fewest`...
    // PostgreSQL: walk the recent ids in order when one in DENSE of the newest documents matches (the planner's
    // estimate for several common words is too low, and a common prefix's GIN entries cost more to read than the
    // walk); rarer queries are left to its GIN plans.
    const forceWalk = (newest * DENSE >= fewest * COMMON_SPAN || widelyDense) && !kindIndex;
    if (
      !forceWalk &&
      dialect === 'postgres' &&
      (hasKindGin(scope.kinds) || rareEverywhere || sparseThroughout)
    ) {
      // Sparse, one kind with a GIN index of its own (comments, users): its newest `most` matches of any age come
      // from one read of that index, and steps 2 and 3 are cut from them; apart, each step read every match of the
      // kind again (docs/search.md, "Rare words in one kind on PostgreSQL"). A word the samples find rare is read
      // the same way from the main GIN index: its matches are few, and the recent window, the density sample below it
      // and the older walk were three more round trips for the same rows (docs/search.md, "Rare words everywhere").
      // So is a query the samples find sparse in the window and in the spread ranges: the window's read through GIN
      // reads every entry of the words whatever its id bounds, and so does the older read whenever the density
      // sample below the window is sparse too (docs/search.md, "Sparse queries in one read (PostgreSQL)").
      // A kind without an index of its own keeps the walk of its few documents in id order (fewDocsOfKind).
      ({ candidates, more } = windowAndOlder(read ?? (await walk(most, oneRead))));
    } else if (
      dialect === 'sqlite' &&
      recent >= first &&
      recentWindowSparse({ newest, spanIds: span.toId - span.afterId, windowIds: top - recent, fewest })
    ) {
      // SQLite, a sparse window: steps 2 and 3 as one walk (windowAndOlderInOneWalk).
      ({ candidates, more } = await windowAndOlderInOneWalk({ afterId: first - 1, beforeId: last + 1 }));
    } else {
      // PostgreSQL: the index of recent documents instead of the window's rows, where that reads less (docs/search.md,
      // "The index of recent documents (PostgreSQL)"). One word only: the count gives the density of all the words
      // together, but GIN reads each word's entries, and those of `the`, `and`, `of` fill most of the index.
      const recentIndex = recentIndexFor(newest, forceWalk);
      const below = head?.at(-1);
      if (head === undefined) {
        candidates = await walk(most, { afterId: recent, beforeId: last + 1, forceWalk, recentIndex });
      } else if (head.length === headLimit && headLimit < most && below) {
        // The window's walk goes on below the read, which holds its newest `headLimit` matches. When the read held
        // every one of the caller's messages there, they are not read again: the other kinds' walk is merged with
        // those below the read.
        const restWalk = { afterId: recent, beforeId: below.id, forceWalk, recentIndex };
        const rest =
          headOwn === undefined
            ? await walk(most - headLimit, restWalk)
            : merged(
                headOwn.filter((c) => c.id < below.id),
                await walk(most - headLimit, { ...restWalk, beforeId: Math.min(below.id, top + 1) }, kinds),
                { direction: 'desc', offset: 0, limit: most - headLimit },
              );
        candidates = head.concat(rest);
      } else {
        candidates = head;
      }
      if (candidates.length < fewest) {
        // 3. ... else (a rare query) the newest `most` matches whatever their age.
        if (recent >= first && dialect === 'postgres') {
          candidates = candidates.concat(await olderInChunks(most - candidates.length, first, recent));
        } else if (recent >= first) {
          const older = await walk(most - candidates.length, { afterId: first - 1, beforeId: recent + 1 });
          candidates = candidates.concat(older);
        }
        more = candidates.length === most;
      }
    }
  }
  const c = candidates.length;
  let out: DocRef[] = [];
  if (window.offset < c) {
    const scores = relevanceScores(match.terms, candidates);
    const ranked = candidates
      .map((doc, i) => ({ doc, score: scores[i] ?? 0 }))
      .sort((a, b) => b.score - a.score || b.doc.id - a.doc.id)
      .map((x) => x.doc);
    if (order.direction === 'asc') ranked.reverse();
    out = ranked.slice(window.offset, window.offset + window.limit);
  }
  // 4. Every older match after the ranked ones, newest first.
  const boundary = candidates[c - 1];
  if (more && boundary && window.offset + window.limit > c) {
    const tail = await findMatchesById(db, dialect, match, scope, {
      direction: 'desc',
      afterId: first - 1,
      beforeId: boundary.id,
      walkAbove: recent,
      otherKinds,
      prefixShare,
      offset: Math.max(0, window.offset - c),
      limit: window.limit - out.length,
    });
    out = out.concat(tail);
  }
  return refsOf(out);
}

/**
 * PostgreSQL, a preview of one kind (exactly `fewest` candidates: a column of /search/types): whether its candidates
 * can be read before any count. Whatever the count of the newest range says, they are the newest `most` matches in
 * scope (a common query's newest `fewest`, or the recent window's and then older ones up to `most`), so the count only
 * chose a plan; the caller's messages (read through their sides or the index of their words and parties, chosen by
 * their own count, fewMessagesOf) and networks or media with few documents in the range (walked through their own
 * ids, fewDocsOfKind) have one plan whatever it says (docs/search.md, "Previews without a count").
 */
async function onePlanPreview(
  db: Db,
  scope: Scope,
  range: { afterId: number; beforeId: number },
): Promise<boolean> {
  const [kind] = scope.kinds;
  if (scope.kinds.length !== 1) return false;
  if (kind === 'messages') return scope.viewer !== null;
  // Posts are most documents of a world; users and comments have an index of their own, whose plans the count chooses.
  return (kind === 'network' || kind === 'media') && fewDocsOfKind(db, scope.kinds, range);
}

/**
 * PostgreSQL, a preview of one kind with few documents and a GIN index of its own (media, migration 0035): whether
 * the statistics put the query in less than `statsPreviewGinShare` of the documents, so that reading every match of
 * the kind through that index costs less than walking its documents in id order up to the preview's `most` (200).
 * Measured on the seeded world's 5,000 media items: the index read costs about 3 us a match with its row and sort
 * (2,430 for `the`: 7.4 ms; 17 for `coffee`: 0.4-0.6 ms), the walk about 1.2 us a document (all 5,000: 5-7 ms). At a
 * share s of k documents the index reads s * k matches, the walk min(k, most / s) documents: the index wins below
 * s = sqrt(0.4 * most / k), 0.089 for the most documents a walked kind may have (FEW_DOCS, 10,000), 0.126 for 5,000.
 * The share is of every document and stands in for the kind's own: a word common among media alone is read whole
 * (up to about 15 ms for 5,000 items), which costs time, never answers. Without usable statistics the walk stays.
 */
async function previewViaKindGin(
  db: Db,
  match: Match,
  scope: Scope,
  stats: StatsFreshness | undefined,
): Promise<boolean> {
  const { statsPreviewGinShare, statsChangedRows } = searchTuning;
  if (statsPreviewGinShare <= 0 || !hasPreviewGin(scope.kinds)) return false;
  const share = await matchShareByStatistics(db, match, stats, statsChangedRows);
  return share !== null && share < statsPreviewGinShare;
}

/**
 * Whether the statistics' share of a word can choose the reads of a scope (exactDocs, "Dense words by the
 * statistics"): the share is of every document, so a scope narrowed to a language, some users or one kind with an
 * index of its own (whose counts also choose a plan from the spread ranges) is counted as before; and the newest
 * range must lie in the recent window the read covers.
 */
function denseHintFits(scope: Scope, span: { afterId: number }, recent: number): boolean {
  return (
    scope.kinds.includes('post') &&
    !hasKindGin(scope.kinds) &&
    scope.language === undefined &&
    scope.friendsOf === undefined &&
    (scope.excludeUuids?.length ?? 0) === 0 &&
    span.afterId >= recent
  );
}

/** Found documents without their text. */
function refsOf(docs: DocRef[]): DocRef[] {
  return docs.map(({ id, kind, uuid }) => ({ id, kind, uuid }));
}
