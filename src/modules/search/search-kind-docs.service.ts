// The documents of each kind, as a SQLite search's FTS5 kind filter uses them (kindFilter in search.repository.ts).
import type { Context } from '../../context.ts';
import type { DocKind, Scope } from './search.repository.ts';
import { countDocsByKind } from './search-kind-docs.repository.ts';

/** How long a count of the documents of each kind serves before a search counts them again, without waiting. */
export const KIND_DOCS_MAX_AGE_MS = 10 * 60_000;

interface KindDocs {
  /** Undefined when the count failed: the filter then names the fewer kinds, as before any count. */
  counts: Promise<ReadonlyMap<DocKind, number> | undefined>;
  takenAt: number;
}

// One entry per reading database, that is per app: two apps in one process (the tests) never share their counts.
const known = new WeakMap<object, KindDocs>();

const counted = (ctx: Context) => countDocsByKind(ctx.readDb).catch(() => undefined);

/**
 * `scope` with the documents of each kind in the index (Scope.kindDocs) on SQLite; as given on PostgreSQL, which
 * has no such filter. The first search of an app waits for the count; once it is older than KIND_DOCS_MAX_AGE_MS,
 * the next search starts another and goes on with the last. A count out of date costs speed only: both sides of a
 * kind filter keep the same documents.
 */
export async function withKindDocs(ctx: Context, scope: Scope): Promise<Scope> {
  if (ctx.dialect !== 'sqlite') return scope;
  let entry = known.get(ctx.readDb);
  if (entry === undefined) {
    entry = { counts: counted(ctx), takenAt: Date.now() };
    known.set(ctx.readDb, entry);
  } else if (Date.now() - entry.takenAt > KIND_DOCS_MAX_AGE_MS) {
    // One count at a time: the next is due a period after this one started.
    entry.takenAt = Date.now();
    const current = entry;
    void counted(ctx).then((counts) => {
      if (counts !== undefined) current.counts = Promise.resolve(counts);
    });
  }
  const kindDocs = await entry.counts;
  return kindDocs === undefined ? scope : { ...scope, kindDocs };
}
