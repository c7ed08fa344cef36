import { parentPort, workerData } from 'node:worker_threads';
import { NodeSqliteDatabase } from './sqlite-driver.ts';

/** What the pool sends: one SELECT and its parameters. */
export interface ReaderRequest {
  id: number;
  sql: string;
  parameters: unknown[];
}

/** What the worker answers: the column names and the rows as arrays of values, or the error's message and codes. */
export type ReaderResponse =
  | { id: number; columns: string[]; rows: unknown[][] }
  | { id: number; error: { message: string; code?: string; errcode?: number; errstr?: string } };

const { path, busyTimeoutMs, cacheMb } = workerData as {
  path: string;
  busyTimeoutMs: number;
  cacheMb: number | undefined;
};
// Read-only: a statement that slipped past the pool's SELECT check still cannot write (SQLITE_READONLY).
const database = new NodeSqliteDatabase({ path, synchronous: 'NORMAL', busyTimeoutMs, readOnly: true });
// A search joins each of up to 1,000 matches to its row; with SQLite's 2 MB a recent window's rows (about 9 MB for
// 30,000 documents) never stayed cached, and each lookup went to the OS for its page (docs/search.md, "Speed").
if (cacheMb !== undefined) database.raw.exec(`PRAGMA cache_size = ${-Math.trunc(cacheMb) * 1024}`);

parentPort?.on('message', (request: ReaderRequest) => {
  let response: ReaderResponse;
  try {
    const stmt = database.prepare(request.sql);
    if (!stmt.reader) throw new Error('The reader pool runs only statements that return rows.');
    // Binding (Date -> ISO, boolean -> 1/0, undefined -> NULL) comes from the shared driver code. Rows go as arrays
    // of values, the column names once: the pool builds the objects (rowObjects), a copy between threads half as long.
    // Row by row rather than all(): JavaScript runs between rows, so a read that outgrows the thread's heap limit
    // stops at once; inside all() the collector would thrash for minutes until the whole result was built.
    const rows: unknown[][] = [];
    for (const row of stmt.iterateArrays(request.parameters)) rows.push(row);
    response = { id: request.id, columns: stmt.columnNames(), rows };
  } catch (err) {
    const e = err as { message?: string; code?: string; errcode?: number; errstr?: string };
    response = {
      id: request.id,
      error: { message: String(e.message ?? err), code: e.code, errcode: e.errcode, errstr: e.errstr },
    };
  }
  parentPort?.postMessage(response);
});
