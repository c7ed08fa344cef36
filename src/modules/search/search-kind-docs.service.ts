// The documents of each kind, as a SQLite search's FTS5 kind filter uses them (kindFilter in search.repository.ts).
import type { Context } from '../../context.ts';
import type { DocKind, Scope } from './search.repository.ts';
import { countDocsByKind } from './search-kind-docs.repository.ts';

/** How long a count of the documents of each kind serves before a search counts them again, without waiting. */
export const KIND_DOCS_MAX_AGE_MS = 10 * 60_000;

/** How soon after a failed count a search tries again. */
export const KIND_DOCS_RETRY_MS = 10_000;

type KindCounts = ReadonlyMap<DocKind, number>;

interface KindDocs {
  /** The last count that succeeded; undefined until one has. */
  counts: Promise<KindCounts | undefined>;
  /** When the next search starts a count: never while one runs. */
  dueAt: number;
}

// One entry per reading database, that is per app: two apps in one process (the tests) never share their counts.
const known = new WeakMap<object, KindDocs>();

/** Counts the documents of each kind for `entry`, and sets when the next count is due (sooner after a failure). */
function recount(ctx: Context, entry: KindDocs): Promise<KindCounts | undefined> {
  entry.dueAt = Number.POSITIVE_INFINITY;
  return countDocsByKind(ctx.readDb).then(
    (counts) => {
      entry.dueAt = Date.now() + KIND_DOCS_MAX_AGE_MS;
      return counts;
    },
    () => {
      entry.dueAt = Date.now() + KIND_DOCS_RETRY_MS;
      return undefined;
    },
  );
}

/**
 * `scope` with the documents of each kind in the index (Scope.kindDocs) on SQLite; as given on PostgreSQL, which
 * has no such filter. The first search of an app waits for the count (60-80 ms for 1,456,000 documents with the
 * index cached), so its statements are the same from then on; once the count is older than KIND_DOCS_MAX_AGE_MS, the
 * next search starts another and goes on with the last. Without a count (it failed), the filter names the fewer
 * tokens, as before any count. A count out of date costs speed only: both sides of a kind filter keep the same
 * documents.
 */
export async function withKindDocs(ctx: Context, scope: Scope): Promise<Scope> {
  if (ctx.dialect !== 'sqlite') return scope;
  let entry = known.get(ctx.readDb);
  if (entry === undefined) {
    const first: KindDocs = { counts: Promise.resolve(undefined), dueAt: 0 };
    first.counts = recount(ctx, first);
    known.set(ctx.readDb, first);
    entry = first;
  } else if (Date.now() >= entry.dueAt) {
    const current = entry;
    void recount(ctx, current).then((counts) => {
      if (counts !== undefined) current.counts = Promise.resolve(counts);
    });
  }
  const kindDocs = await entry.counts;
  return kindDocs === undefined ? scope : { ...scope, kindDocs };
}
