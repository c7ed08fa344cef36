// A rare word told by PostgreSQL's statistics of the index (docs/search.md, "Rare words by the statistics"): when the
// statistics and the documents changed since put a query's matches under a bound, the ranking reads them through GIN
// at once, without first counting its density among the newest documents and over the index.
import type { Db } from '../../db/database.ts';
import { isPrefixTerm } from './search.query.ts';
import { isExpandedPrefix, type Match } from './search.repository.ts';
import { findLexemeStats, type LexemeStats, type StatsFreshness } from './search-word-stats.repository.ts';

// The lexeme statistics of each database (its Kysely instance), read once per ANALYZE: about 10,000 lexemes, read
// again only when the analysis time moves.
const cached = new WeakMap<object, { analyzedAt: string; stats: Promise<LexemeStats | null> }>();

/** The lexeme statistics of the analysis at `analyzedAt`, read once per database and analysis. */
function lexemeStatsOf(db: Db, analyzedAt: string): Promise<LexemeStats | null> {
  const known = cached.get(db);
  if (known?.analyzedAt === analyzedAt) return known.stats;
  const stats = findLexemeStats(db).catch(() => {
    // Unread, the search counts as before; the next one asks again.
    if (cached.get(db)?.stats === stats) cached.delete(db);
    return null;
  });
  cached.set(db, { analyzedAt, stats });
  return stats;
}

/**
 * Whether the statistics can bound a query's matches at all: no stemmed lexemes (their forms are not known here)
 * and at least one whole word, or a last word expanded to the words it starts.
 */
function boundable(match: Match): boolean {
  return (
    !match.stem && match.terms.some((_, i) => !isPrefixTerm(match.terms, i) || isExpandedPrefix(match, i))
  );
}

/**
 * The documents that held the query's words when the statistics were taken, at most (Infinity when they cannot
 * tell): the words all match, so the fewest of any one term. A listed lexeme counts its share of the rows, any other
 * the smallest share listed, which bounds every lexeme left out; an expanded last word counts each word it stands
 * for. A stemmed query, or a prefix no list of words stands for, is not bounded.
 */
export function matchesAtMost(match: Match, stats: LexemeStats): number {
  if (match.stem) return Number.POSITIVE_INFINITY;
  let fewest = Number.POSITIVE_INFINITY;
  match.terms.forEach((term, i) => {
    const expanded = isExpandedPrefix(match, i);
    if (!expanded && isPrefixTerm(match.terms, i)) return;
    const words = expanded ? (match.prefixWords ?? []) : [term];
    const share = words.reduce((sum, w) => sum + (stats.freqs.get(w) ?? stats.minFreq), 0);
    fewest = Math.min(fewest, share * stats.rows);
  });
  return fewest;
}

/**
 * PostgreSQL: whether the statistics of the last ANALYZE put the query's matches at `most` at most, while at most
 * `changedMost` rows of search_docs changed since. Those rows are not in the statistics: a word they made common is
 * read whole through GIN, up to `most + changedMost` entries, where the counts would have walked it (docs/search.md,
 * "Rare words by the statistics"). False when the statistics cannot tell (never analyzed, reset, a stemmed query, a
 * short prefix), and always with `most` 0.
 */
export async function rareByStatistics(
  db: Db,
  match: Match,
  freshness: StatsFreshness | undefined,
  bounds: { most: number; changedMost: number },
): Promise<boolean> {
  const { most, changedMost } = bounds;
  if (most <= 0 || freshness?.analyzedAt == null || freshness.changedSince > changedMost || !boundable(match))
    return false;
  const stats = await lexemeStatsOf(db, freshness.analyzedAt);
  return stats !== null && matchesAtMost(match, stats) <= most;
}
