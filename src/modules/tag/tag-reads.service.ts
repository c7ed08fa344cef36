// Single-tag reads (GET /tags/{uuid}), for every request of an event-loop turn by one statement (PostgreSQL).
import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { type BatchLoad, turnBatchedReads } from '../../db/turn-batch.ts';
import {
  findVisibleTagsForViewersPg,
  findVisibleTagWithAssociations,
  type TagViewerRead,
  type VisibleTag,
} from './tag.repository.ts';

/** The key of one read in the turn's batch: the tag and the viewer, as JSON. */
function readKey(uuid: string, viewer: string | null): string {
  return JSON.stringify([uuid, viewer]);
}

/** The load of a turn's reads by key (PostgreSQL). */
function loadFor(perTag: number): BatchLoad<VisibleTag> {
  return async (db: Db, keys: string[]) => {
    const reads = keys.map((key) => {
      const [uuid, viewer] = JSON.parse(key) as [string, string | null];
      return { uuid, viewer } satisfies TagViewerRead;
    });
    const found = await findVisibleTagsForViewersPg(db, reads, perTag);
    return new Map([...found].map(([i, tag]) => [keys[i] as string, tag]));
  };
}

// One load per number of associations, the same function at every call, as turnBatchedReads asks.
const loads = new Map<number, BatchLoad<VisibleTag>>();

/**
 * A tag `viewer` (null for a guest) may see, with the uuids of its newest `perTag` associations the viewer may see;
 * undefined when it is missing or hidden from them. On PostgreSQL the reads of one event-loop turn, by every viewer,
 * go together in one statement (TurnBatchedReads): 50 users reading a tag while posts are written each missed the
 * answer cache after every commit, and each read was a round trip, most of whose cost was the write to the server's
 * socket. Exact as a read of its own: the statement is sent after every request it answers arrived. SQLite reads in
 * the process, where a statement costs no round trip.
 */
export async function findVisibleTag(
  ctx: Context,
  uuid: string,
  viewer: string | null,
  perTag: number,
): Promise<VisibleTag | undefined> {
  if (ctx.dialect !== 'postgres')
    return findVisibleTagWithAssociations(ctx.db, ctx.dialect, uuid, viewer, perTag);
  let load = loads.get(perTag);
  if (!load) {
    load = loadFor(perTag);
    loads.set(perTag, load);
  }
  return turnBatchedReads(ctx.db, `tag-reads:${perTag}`, load).get(readKey(uuid, viewer));
}
