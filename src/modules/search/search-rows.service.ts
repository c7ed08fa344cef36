// The rows of a page's documents, read for every search of an event-loop turn by one statement per kind (PostgreSQL).
import type { Context } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { turnBatchedReads } from '../../db/turn-batch.ts';
import { DOC_KINDS, type DocKind, findRowsByUuids, findRowsByUuidsPg } from './search.repository.ts';

type Row = Record<string, unknown>;
type RowLoad = (db: Db, uuids: string[]) => Promise<Map<string, Row>>;

/** The load of one kind's rows by uuid, keyed by uuid (PostgreSQL). */
function rowLoad(kind: DocKind): RowLoad {
  return async (db, uuids) => {
    const rows = (await findRowsByUuidsPg(db, kind, uuids)) as Row[];
    return new Map(rows.map((row) => [row.uuid as string, row]));
  };
}

// One load per kind, the same function at every call, as turnBatchedReads asks.
const loads = Object.fromEntries(DOC_KINDS.map((kind) => [kind, rowLoad(kind)])) as Record<DocKind, RowLoad>;

/**
 * The rows of the documents `uuids` of one kind, one per document found (a document deleted since its search read
 * it is left out), in no order. On PostgreSQL the reads of one event-loop turn go together, one statement per kind
 * for up to MAX_BATCH_KEYS uuids (TurnBatchedReads): each page read its rows with a statement per kind, up to six for
 * a /search/types request, each a round trip and a wake-up of a server process on the same two cores; concurrent
 * searches now share them. Exact as a read of its own: the statement is sent after every search it answers asked.
 * SQLite reads in the process (on a reader thread when there are some), where a statement costs no round trip.
 */
export async function findDocRows(ctx: Context, kind: DocKind, uuids: string[]): Promise<Row[]> {
  if (ctx.dialect !== 'postgres') return (await findRowsByUuids(ctx.readDb, kind, uuids)) as Row[];
  const reads = turnBatchedReads(ctx.readDb, `search-rows:${kind}`, loads[kind]);
  const rows = await Promise.all([...new Set(uuids)].map((uuid) => reads.get(uuid)));
  return rows.filter((row) => row !== undefined);
}
