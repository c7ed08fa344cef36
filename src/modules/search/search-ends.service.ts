// The id ranges a PostgreSQL ranking starts from, read for every search of an event-loop turn by one statement.
import type { Db } from '../../db/database.ts';
import { turnBatchedReads } from '../../db/turn-batch.ts';
import { DOC_KINDS, type DocKind } from './search.repository.ts';
import { docIdRanges } from './search-ends.repository.ts';
import type { StatsFreshness } from './search-word-stats.repository.ts';

type DocIdRanges = Awaited<ReturnType<typeof docIdRanges>>;

/** One key's share of a batch: the range of a set of kinds, or (RANKING) what every ranking reads besides. */
interface RangesPart {
  range?: { first: number; last: number };
  recentIndex?: number | undefined;
  stats?: StatsFreshness | undefined;
}

// The key every ranking asks for along with its kind sets. A ranking never asks for an empty set of kinds (exactDocs
// returns before), so no set's key is empty.
const RANKING = '';

// Batches of at most this many sets are prepared: one search's own (one set, or two for a signed-in caller), and the
// pairs of two lone ones, at most 36 texts over the 8 sets a ranking asks for. Larger mixes (a /search/types request's
// columns, with whatever else the turn holds) run unnamed: their texts could use up MAX_PREPARED.
const PREPARED_SETS = 2;

/** One key per set of kinds, whatever their order or repeats. */
function kindSetKey(kinds: readonly DocKind[]): string {
  return DOC_KINDS.filter((k) => kinds.includes(k)).join(',');
}

/**
 * PostgreSQL: docIdRanges(..., forRanking) of `kindSets`, read together with the ranges every other search asks for
 * in the same event-loop turn, in one statement (TurnBatchedReads). A /search/types request ranks each of its
 * columns apart and read their ranges in five or six statements (a guest's messages column reads none), each a round
 * trip and a wake-up of a server process on the same two cores; concurrent searches share one. Exact as a read of its
 * own: the statement is sent after every search it answers asked.
 */
export async function rankingDocIdRanges(
  db: Db,
  kindSets: readonly (readonly DocKind[])[],
): Promise<DocIdRanges> {
  const reads = turnBatchedReads<RangesPart>(db, 'search-doc-id-ranges', loadRankingRanges);
  const [extras, ...parts] = await Promise.all([
    reads.get(RANKING),
    ...kindSets.map((kinds) => reads.get(kindSetKey(kinds))),
  ]);
  return {
    ranges: parts.map((p) => p?.range ?? { first: 0, last: 0 }),
    recentIndex: extras?.recentIndex,
    ...(extras?.stats ? { stats: extras.stats } : {}),
  };
}

async function loadRankingRanges(db: Db, keys: string[]): Promise<Map<string, RangesPart>> {
  // Sorted, so one mix of kind sets has one statement text whatever order its searches asked in.
  const sets = keys.filter((k) => k !== RANKING).sort();
  const read = await docIdRanges(
    db,
    'postgres',
    sets.map((k) => k.split(',') as DocKind[]),
    true,
    sets.length <= PREPARED_SETS,
  );
  const found = new Map<string, RangesPart>(sets.map((k, i) => [k, { range: read.ranges[i] }]));
  found.set(RANKING, { recentIndex: read.recentIndex, stats: read.stats });
  return found;
}
