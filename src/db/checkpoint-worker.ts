import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

/** What the worker answers after each checkpoint: frames in the WAL and frames copied into the database file. */
export interface CheckpointResponse {
  busy: number;
  log: number;
  checkpointed: number;
  error?: string;
}

// Copies committed WAL frames into the database file (and fsyncs it) on this thread, so the event loop that owns
// the write connection does not stall for it. PASSIVE never waits for readers or the writer: it copies what it can.
const { path } = workerData as { path: string };
const database = new DatabaseSync(path);
database.exec('PRAGMA busy_timeout = 0');
database.exec('PRAGMA wal_autocheckpoint = 0');
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');

parentPort?.on('message', (message: 'checkpoint' | 'close') => {
  if (message === 'close') {
    // Closed here rather than by thread teardown, so the write connection is the last one and can remove the WAL.
    database.close();
    parentPort?.close();
    return;
  }
  let response: CheckpointResponse;
  try {
    const row = checkpoint.get() as { busy: number; log: number; checkpointed: number };
    response = { busy: row.busy, log: row.log, checkpointed: row.checkpointed };
  } catch (err) {
    // Another checkpoint running (the write connection's own) is not an error worth more than a retry later.
    response = { busy: 1, log: -1, checkpointed: -1, error: String((err as Error).message ?? err) };
  }
  parentPort?.postMessage(response);
});
