import type { Db } from './database.ts';

/** Most keys one batched statement asks for; a turn that asks for more sends several statements. */
export const MAX_BATCH_KEYS = 500;

/** How a batch loads its keys from a database: the values found, by key (missing keys left out). */
export type BatchLoad<V> = (db: Db, keys: string[]) => Promise<Map<string, V>>;

interface Batch<V> {
  keys: Set<string>;
  found: Promise<Map<string, V>>;
}

/**
 * Point reads by key asked during one event-loop turn, sent together as one statement once the turn's I/O callbacks
 * have run (setImmediate), when every request that arrived in the turn has asked. On PostgreSQL each statement is a
 * round trip and a wake-up of a server process on the same two cores: under load, 50 concurrent reads of records by
 * uuid cost one statement instead of 50 (docs/benchmarks.md, "Targets of issue 8, eighteenth session"). Exact as
 * each read alone: the statement is sent after every request it answers arrived, so it sees every write committed
 * before them.
 */
export class TurnBatchedReads<V> {
  readonly #load: (keys: string[]) => Promise<Map<string, V>>;
  #open: Batch<V> | undefined;

  constructor(load: (keys: string[]) => Promise<Map<string, V>>) {
    this.#load = load;
  }

  /** The value of `key`, undefined when the load finds none; read by this turn's batch. */
  async get(key: string): Promise<V | undefined> {
    let batch = this.#open;
    if (!batch || batch.keys.size >= MAX_BATCH_KEYS) batch = this.#start();
    batch.keys.add(key);
    return (await batch.found).get(key);
  }

  #start(): Batch<V> {
    const keys = new Set<string>();
    const found = new Promise<Map<string, V>>((resolve, reject) => {
      setImmediate(() => {
        if (this.#open?.keys === keys) this.#open = undefined;
        // Through a promise, so a load that throws before it returns one fails its reads, not the process.
        Promise.resolve()
          .then(() => this.#load([...keys]))
          .then(resolve, reject);
      });
    });
    const batch = { keys, found };
    this.#open = batch;
    return batch;
  }
}

const batches = new WeakMap<Db, Map<string, TurnBatchedReads<unknown>>>();

/** The batched reads named `purpose` of the database `db`; `load` is the same function for every call of a purpose. */
export function turnBatchedReads<V>(db: Db, purpose: string, load: BatchLoad<V>): TurnBatchedReads<V> {
  let byPurpose = batches.get(db);
  if (!byPurpose) {
    byPurpose = new Map();
    batches.set(db, byPurpose);
  }
  let reads = byPurpose.get(purpose) as TurnBatchedReads<V> | undefined;
  if (!reads) {
    reads = new TurnBatchedReads((keys) => load(db, keys));
    byPurpose.set(purpose, reads as TurnBatchedReads<unknown>);
  }
  return reads;
}
