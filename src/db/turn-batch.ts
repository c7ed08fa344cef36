import type { Db } from './database.ts';

/** Most keys one batched statement asks for; a turn that asks for more sends several statements. */
export const MAX_BATCH_KEYS = 500;

/**
 * Point reads by key asked during one event-loop turn, sent together as one statement once the turn's I/O callbacks
 * have run (setImmediate), when every request that arrived in the turn has asked. On PostgreSQL each statement is a
 * round trip and a wake-up of a server process on the same two cores: under load, 50 concurrent reads of records by
 * uuid cost one statement instead of 50 (docs/benchmarks.md, eighteenth session). Exact as each read alone: the
 * statement is sent after every request it answers arrived, so it sees every write committed before them.
 */
export class TurnBatchedReads<V> {
  readonly #load: (keys: string[]) => Promise<Map<string, V>>;
  #keys: Set<string> | undefined;
  #found: Promise<Map<string, V>> | undefined;

  constructor(load: (keys: string[]) => Promise<Map<string, V>>) {
    this.#load = load;
  }

  /** The value of `key`, undefined when the load finds none; read by this turn's batch. */
  async get(key: string): Promise<V | undefined> {
    if (!this.#keys || this.#keys.size >= MAX_BATCH_KEYS) this.#start();
    (this.#keys as Set<string>).add(key);
    return (await (this.#found as Promise<Map<string, V>>)).get(key);
  }

  #start(): void {
    const keys = new Set<string>();
    this.#keys = keys;
    this.#found = new Promise((resolve, reject) => {
      setImmediate(() => {
        if (this.#keys === keys) this.#keys = undefined;
        this.#load([...keys]).then(resolve, reject);
      });
    });
  }
}

const batches = new WeakMap<Db, Map<string, TurnBatchedReads<unknown>>>();

/** The batched reads named `purpose` of the database `db`, made with `load` on first use. */
export function turnBatchedReads<V>(
  db: Db,
  purpose: string,
  load: (keys: string[]) => Promise<Map<string, V>>,
): TurnBatchedReads<V> {
  let byPurpose = batches.get(db);
  if (!byPurpose) {
    byPurpose = new Map();
    batches.set(db, byPurpose);
  }
  let reads = byPurpose.get(purpose) as TurnBatchedReads<V> | undefined;
  if (!reads) {
    reads = new TurnBatchedReads(load);
    byPurpose.set(purpose, reads as TurnBatchedReads<unknown>);
  }
  return reads;
}
