/** A read whose caller went away (its client closed the connection) before a slot was free: it never ran. */
export class ReadAbandonedError extends Error {
  constructor() {
    super('the client closed the connection before its read was computed');
    this.name = 'ReadAbandonedError';
  }
}

/**
 * At most `slots` heavy reads at a time, the others waiting in arrival order: the rows of at most `slots` of them reach
 * the event loop at once, and a read admitted no longer waits behind the statements of every other heavy read.
 */
export class ReadGate {
  readonly #slots: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  /** `slots`: reads running at once (at least 1). */
  constructor(slots: number) {
    this.#slots = Math.max(1, Math.floor(slots));
  }

  /**
   * Runs `read` once a slot is free; the slot is freed when it settles, whether it succeeded or failed. A read that
   * had to wait and whose caller is `abandoned` by its turn is not run: it fails with ReadAbandonedError, so the
   * requests of clients that gave up (timed out, closed) do not hold up those still waiting.
   */
  async run<T>(read: () => Promise<T>, abandoned?: () => boolean): Promise<T> {
    if (this.#running >= this.#slots) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
      if (abandoned?.()) {
        this.#release();
        throw new ReadAbandonedError();
      }
    } else {
      this.#running++;
    }
    try {
      return await read();
    } finally {
      this.#release();
    }
  }

  #release(): void {
    const next = this.#waiting.shift();
    // The slot passes straight to the next reader, so a read arriving meanwhile cannot overtake it.
    if (next) next();
    else this.#running--;
  }

  /** Reads running and waiting, for tests and metrics. */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }
}
