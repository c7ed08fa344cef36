import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

/** What the worker answers to each flush: nothing, or the error. */
export interface FlushResponse {
  error?: { message: string; code?: string };
}

// Flushes the WAL file on a thread of its own: on libuv's pool a flush would queue behind password hashing (argon2,
// tens of milliseconds each, four at a time), and every write waits for its flush.
const { walPath } = workerData as { walPath: string };
let fd: number | undefined;

parentPort?.on('message', (message: 'flush' | 'close') => {
  if (message === 'close') {
    if (fd !== undefined) closeSync(fd);
    parentPort?.close();
    return;
  }
  let response: FlushResponse = {};
  try {
    // Kept open: SQLite never deletes the WAL while the write connection is open, and it locks the database and
    // -shm files, never this one, so this descriptor holds or releases no lock of SQLite's.
    fd ??= openSync(walPath, 'r');
    fdatasyncSync(fd);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // No WAL file yet: no commit has written a frame since the database was created, so nothing waits to be durable.
    if (e.code !== 'ENOENT') response = { error: { message: String(e.message), code: e.code } };
  }
  parentPort?.postMessage(response);
});
