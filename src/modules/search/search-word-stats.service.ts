// A rare word told by PostgreSQL's statistics of the index (docs/search.md, "Rare words by the statistics"): when the
// statistics of the last ANALYZE put a query's matches under a bound, the ranking reads them through GIN at once and
// takes the count of the newest documents from them, instead of counting first.
import type { Db } from '../../db/database.ts';
import { isPrefixTerm } from './search.query.ts';
import { isExpandedPrefix, type Match } from './search.repository.ts';
import { findLexemeStats, type LexemeStats, type StatsFreshness } from './search-word-stats.repository.ts';

/**
 * When the statistics are read again, in ms: `retryMs` after a failed read (until then, the counts decide), and
 * `settleMs` after the analysis when they were read sooner. PostgreSQL makes an analysis's time known, and starts its
 * count of rows changed since, before the analysis's transaction commits the statistics (an ANALYZE inside a
 * migration's transaction, say): a read that soon may still hold the previous analysis's, the latest committed. They
 * are used until the read once settled, since only plans depend on them: left unused, every common word was counted
 * for a minute after each analysis (PostgreSQL `the` 27-30 ms over HTTP against 5-8). A mutable object so tests can
 * shorten them.
 */
export const wordStatsTiming = { retryMs: 10_000, settleMs: 60_000 };

interface StatsEntry {
  analyzedAt: string;
  stats: Promise<LexemeStats | null>;
  /** When a search reads them again for the same analysis: never, unless the read failed or came too soon. */
  dueAt: number;
}

// One entry per reading database (its Kysely instance), that is per app: about 10,000 lexemes, read once per ANALYZE.
const cached = new WeakMap<object, StatsEntry>();

/** The lexeme statistics of the analysis at `analyzedAt`, read once per database and analysis. */
function lexemeStatsOf(db: Db, analyzedAt: string): Promise<LexemeStats | null> {
  const known = cached.get(db);
  if (known?.analyzedAt === analyzedAt && Date.now() < known.dueAt) return known.stats;
  const entry: StatsEntry = { analyzedAt, stats: Promise.resolve(null), dueAt: Number.POSITIVE_INFINITY };
  entry.stats = findLexemeStats(db).then(
    ({ stats, analyzedAgoMs }) => {
      if (analyzedAgoMs < wordStatsTiming.settleMs)
        entry.dueAt = Date.now() + wordStatsTiming.settleMs - analyzedAgoMs;
      return stats;
    },
    () => {
      // Unread, searches count as before until the next try.
      entry.dueAt = Date.now() + wordStatsTiming.retryMs;
      return null;
    },
  );
  cached.set(db, entry);
  return entry.stats;
}

/**
 * A typed word PostgreSQL's parser keeps whole as one lexeme, as the statistics list it: letters of the Latin, Greek
 * or Cyrillic scripts only. It splits some others into several (`1e5x` into a number and a word; letters it does not
 * know, under its locale, into pieces), and such a word would be looked up as missing, so rare. An expanded last
 * word's words are the index's own lexemes (search_words).
 */
const LEXEME_AS_TYPED = /^[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]+$/u;

/** The lexemes whose statistics bound term `i` of a match; undefined when they cannot bound it. */
function lexemesOf(match: Match, i: number): readonly string[] | undefined {
  if (isExpandedPrefix(match, i)) return match.prefixWords;
  const term = match.terms[i] as string;
  return isPrefixTerm(match.terms, i) || !LEXEME_AS_TYPED.test(term) ? undefined : [term];
}

/**
 * The documents that held the query's words when the statistics were taken, at most (Infinity when they cannot
 * tell): the words all match, so the fewest of any one term. A listed lexeme counts its share of the rows, any other
 * the smallest share listed, which bounds every lexeme left out; an expanded last word counts each word it stands
 * for. A stemmed query, a prefix no list of words stands for, or a word the parser may split is not bounded.
 */
export function matchesAtMost(match: Match, stats: LexemeStats): number {
  if (match.stem) return Number.POSITIVE_INFINITY;
  let fewest = Number.POSITIVE_INFINITY;
  match.terms.forEach((_, i) => {
    const words = lexemesOf(match, i);
    if (words === undefined) return;
    const share = words.reduce((sum, w) => sum + (stats.freqs.get(w) ?? stats.minFreq), 0);
    fewest = Math.min(fewest, share * stats.rows);
  });
  return fewest;
}

// The listed lexemes in code-unit order with their shares, for the sums of a prefix: one per list read.
const sortedLists = new WeakMap<LexemeStats, { words: string[]; shares: number[] }>();

/** The shares of the listed lexemes `prefix` starts (itself included), summed. */
function prefixShare(stats: LexemeStats, prefix: string): number {
  let sorted = sortedLists.get(stats);
  if (sorted === undefined) {
    const words = [...stats.freqs.keys()].sort();
    sorted = { words, shares: words.map((w) => stats.freqs.get(w) ?? 0) };
    sortedLists.set(stats, sorted);
  }
  const { words, shares } = sorted;
  // Every word a prefix starts sorts after the prefix and before any other word after it.
  let lo = 0;
  let hi = words.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((words[mid] as string) < prefix) lo = mid + 1;
    else hi = mid;
  }
  let sum = 0;
  for (let i = lo; i < words.length && (words[i] as string).startsWith(prefix); i++)
    sum += shares[i] as number;
  return sum;
}

/**
 * About the share of the documents that held a one-word query when the statistics were taken: the word's own share,
 * or for a last word matched as a prefix the listed lexemes it starts (an expanded one: the words it stands for),
 * summed; lexemes left out of the list count nothing. Null when the statistics cannot tell: several words (their
 * matches together are not listed), a stemmed query, a word the parser may split. A hint for a plan, never a bound:
 * the list merges the plain and stemmed lexemes of every language, so a stem (`happi`) counts documents the typed
 * word does not match, and a prefix's lexemes may share documents.
 */
export function wordShare(match: Match, stats: LexemeStats): number | null {
  if (match.stem || match.terms.length !== 1) return null;
  return termShare(match, 0, stats);
}

/**
 * About the share of the documents that held the words a query's last word starts, matched as a prefix, when the
 * statistics were taken (wordShare's sum for that word, whatever the other words); 0 without such a word or when the
 * statistics cannot tell. GIN reads every entry of a prefix's lexemes into a bitmap before intersecting it with the
 * other words, where it skips through a whole word's entries to those the rarest required one holds (its fast scan):
 * so a prefix is what a common query's read of the index of words and parties costs (as bench_user, `the:*` 8.4-12.2 ms,
 * the whole word `the` 3.0-3.3). An expanded prefix reads its words whole. A hint for a plan (fewMessagesOf).
 */
export function prefixEntryShare(match: Match, stats: LexemeStats): number {
  const last = prefixReadWhole(match);
  return last === undefined ? 0 : (termShare(match, last, stats) ?? 0);
}

/** The index of a query's last word when it is matched as a prefix, not expanded into whole words; else undefined. */
function prefixReadWhole(match: Match): number | undefined {
  const last = match.terms.length - 1;
  return last >= 0 && isPrefixTerm(match.terms, last) && !isExpandedPrefix(match, last) ? last : undefined;
}

/** wordShare's share of term `i` of a match, whatever the other terms; null when the statistics cannot tell. */
function termShare(match: Match, i: number, stats: LexemeStats): number | null {
  if (isExpandedPrefix(match, i))
    return Math.min(
      1,
      (match.prefixWords ?? []).reduce((sum, w) => sum + (stats.freqs.get(w) ?? 0), 0),
    );
  const term = match.terms[i] as string;
  if (!LEXEME_AS_TYPED.test(term)) return null;
  return Math.min(1, isPrefixTerm(match.terms, i) ? prefixShare(stats, term) : (stats.freqs.get(term) ?? 0));
}

/** The statistics of the last ANALYZE while at most `changedMost` rows of search_docs changed since; else null. */
async function freshStatsOf(
  db: Db,
  freshness: StatsFreshness | undefined,
  changedMost: number,
): Promise<LexemeStats | null> {
  if (freshness?.analyzedAt == null || freshness.changedSince > changedMost) return null;
  return lexemeStatsOf(db, freshness.analyzedAt);
}

/**
 * PostgreSQL: wordShare by the statistics of the last ANALYZE, while at most `changedMost` rows of search_docs changed
 * since (a share of older statistics could choose a read far from the word's density now: docs/search.md, "Dense
 * words by the statistics"); null when they cannot tell, or are older.
 */
export async function wordShareByStatistics(
  db: Db,
  match: Match,
  freshness: StatsFreshness | undefined,
  changedMost: number,
): Promise<number | null> {
  if (match.stem || match.terms.length !== 1) return null;
  const stats = await freshStatsOf(db, freshness, changedMost);
  return stats === null ? null : wordShare(match, stats);
}

/**
 * PostgreSQL: prefixEntryShare by the statistics of the last ANALYZE, while at most `changedMost` rows of search_docs
 * changed since; null when they cannot tell (never analyzed, reset, older, or not read at all). 0 without a prefix
 * read as one, whatever they say.
 */
export async function prefixEntryShareByStatistics(
  db: Db,
  match: Match,
  freshness: StatsFreshness | undefined,
  changedMost: number,
): Promise<number | null> {
  if (prefixReadWhole(match) === undefined) return 0;
  const stats = await freshStatsOf(db, freshness, changedMost);
  return stats === null ? null : prefixEntryShare(match, stats);
}

/**
 * PostgreSQL: matchesAtMost by the statistics of the last ANALYZE, with the rows they were taken over, while at most
 * `changedMost` rows of search_docs changed since; null when they cannot tell (never analyzed, reset, older, a stemmed
 * query, no word the statistics bound) or the bound is infinite.
 */
async function matchesByStatistics(
  db: Db,
  match: Match,
  freshness: StatsFreshness | undefined,
  changedMost: number,
): Promise<{ matches: number; rows: number } | null> {
  if (match.stem || !match.terms.some((_, i) => lexemesOf(match, i) !== undefined)) return null;
  const stats = await freshStatsOf(db, freshness, changedMost);
  if (stats === null) return null;
  const matches = matchesAtMost(match, stats);
  return Number.isFinite(matches) ? { matches, rows: stats.rows } : null;
}

/**
 * PostgreSQL: whether the statistics of the last ANALYZE put the query's matches at `most` at most, while at most
 * `changedMost` rows of search_docs changed since. Those rows are not in the statistics: a word they made common is
 * read whole through GIN, up to `most + changedMost` entries, where the counts would have walked it (docs/search.md,
 * "Rare words by the statistics"). Only the plan depends on it, never the answer. False when the statistics cannot
 * tell (never analyzed, reset, a stemmed query, a short prefix), and always with `most` 0.
 */
export async function rareByStatistics(
  db: Db,
  match: Match,
  freshness: StatsFreshness | undefined,
  bounds: { most: number; changedMost: number },
): Promise<boolean> {
  if (bounds.most <= 0) return false;
  const found = await matchesByStatistics(db, match, freshness, bounds.changedMost);
  return found !== null && found.matches <= bounds.most;
}

/**
 * PostgreSQL: the share of the documents the query's words matched at most when the statistics of the last ANALYZE
 * were taken (matchesAtMost over their rows), while at most `changedMost` rows of search_docs changed since; null when
 * they cannot tell (a stemmed query, a prefix no list of words stands for) or are older. A hint for a plan, never a
 * bound on an answer.
 */
export async function matchShareByStatistics(
  db: Db,
  match: Match,
  freshness: StatsFreshness | undefined,
  changedMost: number,
): Promise<number | null> {
  const found = await matchesByStatistics(db, match, freshness, changedMost);
  return found === null || found.rows <= 0 ? null : Math.min(1, found.matches / found.rows);
}
