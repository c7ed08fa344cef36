/** A small, fast, seeded PRNG (mulberry32): the same seed gives the same world. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** Samples ranks 0..n-1 with probability proportional to 1/(rank+1)^s, by binary search over the cumulative weights. */
export class Zipf {
  readonly #cumulative: Float64Array;

  constructor(n: number, s = 1.07) {
    this.#cumulative = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      sum += 1 / (i + 1) ** s;
      this.#cumulative[i] = sum;
    }
    for (let i = 0; i < n; i++) this.#cumulative[i] = (this.#cumulative[i] as number) / sum;
  }

  /** The probability of a rank, 0 the most frequent. */
  probability(rank: number): number {
    if (rank < 0 || rank >= this.#cumulative.length) return 0;
    const upTo = this.#cumulative[rank] ?? 0;
    return rank === 0 ? upTo : upTo - (this.#cumulative[rank - 1] as number);
  }

  /** A rank, 0 the most frequent. */
  sample(random: Random): number {
    const u = random.next();
    let lo = 0;
    let hi = this.#cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#cumulative[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
