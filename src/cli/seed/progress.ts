/** A progress bar on stderr with rate and ETA; quiet when stderr is not a terminal except for a line every 10%. */
export class Progress {
  readonly #label: string;
  readonly #total: number;
  readonly #started = Date.now();
  #done = 0;
  #lastDraw = 0;
  #lastDecile = -1;

  constructor(label: string, total: number) {
    this.#label = label;
    this.#total = Math.max(1, total);
  }

  /** Advances by n items. */
  tick(n = 1): void {
    this.#done += n;
    const now = Date.now();
    if (now - this.#lastDraw < 200 && this.#done < this.#total) return;
    this.#lastDraw = now;
    this.#draw(now);
  }

  /** Ends the bar with the total time. */
  finish(): void {
    this.#done = this.#total;
    this.#draw(Date.now());
    if (process.stderr.isTTY) process.stderr.write('\n');
  }

  #draw(now: number): void {
    const fraction = Math.min(1, this.#done / this.#total);
    const seconds = (now - this.#started) / 1000;
    const rate = this.#done / Math.max(seconds, 0.001);
    const eta = rate > 0 ? (this.#total - this.#done) / rate : 0;
    const width = 30;
    const filled = Math.round(fraction * width);
    // A finished bar tells how long its phase took instead of what is left.
    const tail = this.#done >= this.#total ? `in ${seconds.toFixed(1)}s` : `ETA ${Math.ceil(eta)}s`;
    const line = `${this.#label.padEnd(14)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}% ${this.#done}/${this.#total} ${Math.round(rate)}/s ${tail}`;
    if (process.stderr.isTTY) {
      process.stderr.write(`\r${line}`);
      return;
    }
    const decile = Math.floor(fraction * 10);
    if (decile !== this.#lastDecile) {
      this.#lastDecile = decile;
      process.stderr.write(`${line}\n`);
    }
  }
}
