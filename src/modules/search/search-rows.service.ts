// The rows of a page's documents, read for every search of an event-loop turn by one statement per kind (PostgreSQL).
import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { turnBatchedReads } from '../../db/turn-batch.ts';
import { DOC_KINDS, type DocKind, findRowsByUuids } from './search.repository.ts';

type Row = Record<string, unknown>;
type RowLoad = (db: Db, uuids: string[]) => Promise<Map<string, Row>>;

// One load per kind, the same function at every call, as turnBatchedReads asks.
const loads = new Map<DocKind, RowLoad>(
  DOC_KINDS.map((kind): [DocKind, RowLoad] => [
    kind,
    async (db, uuids) => {
      const rows = (await findRowsByUuids(db, kind, uuids)) as Row[];
      return new Map(rows.map((row) => [row.uuid as string, row]));
    },
  ]),
);

/**
 * The rows of the documents `uuids` of one kind, those found (a document deleted since its search read it is left
 * out), in no order. On PostgreSQL the reads of one event-loop turn go as one statement per kind (TurnBatchedReads):
 * each page read its rows with a statement per kind, up to six for a /search/types request, each a round trip and a
 * wake-up of a server process on the same two cores; concurrent searches now share them. Exact as a read of its own:
 * the statement is sent after every search it answers asked. SQLite reads on a reader thread, with no round trip.
 */
export async function findDocRows(ctx: Context, kind: DocKind, uuids: string[]): Promise<Row[]> {
  if (ctx.dialect !== 'postgres') return (await findRowsByUuids(ctx.readDb, kind, uuids)) as Row[];
  const reads = turnBatchedReads(ctx.readDb, `search-rows:${kind}`, loads.get(kind) as RowLoad);
  const rows = await Promise.all(uuids.map((uuid) => reads.get(uuid)));
  return rows.filter((row) => row !== undefined);
}
