import type { FastifyReply } from 'fastify';
import { nowSeconds } from './envelope.ts';

// The envelope schemas list `timestamp` last, so the serializer writes it last.
const TAIL = '"timestamp":0}';

/**
 * A success answer as its route's response serializer wrote it, encoded once, with the timestamp of the second it
 * is sent: what the exact read caches keep, so an answer served again is neither serialized nor encoded again.
 */
export class RenderedAnswer {
  /**
   * The bytes last sent (at first only the head): a plain field so that the caches' memory estimate
   * (`approxBytes`) counts them.
   */
  bytes: Buffer;
  /** Bytes up to and including `"timestamp":`. */
  readonly #headLength: number;
  #second = -1;

  /** `head`: the serialized envelope up to and including `"timestamp":`. */
  constructor(head: string) {
    // Buffers of their own, never slices of Node's shared pool, which a cached slice would keep alive whole.
    this.#headLength = Buffer.byteLength(head);
    this.bytes = Buffer.allocUnsafeSlow(this.#headLength);
    this.bytes.write(head, 0);
  }

  /** The whole answer with `second` as its timestamp. */
  body(second: number): Buffer {
    if (second !== this.#second) {
      // A new buffer, never the old one rewritten: a response still being written may hold the old one.
      const tail = `${second}}`;
      const body = Buffer.allocUnsafeSlow(this.#headLength + tail.length);
      this.bytes.copy(body, 0, 0, this.#headLength);
      body.write(tail, this.#headLength, 'latin1');
      this.bytes = body;
      this.#second = second;
    }
    return this.bytes;
  }
}

/**
 * Serializes a success envelope with the reply's own response serializer (the route's schema for its status, so
 * only the fields it lists are written), leaving the timestamp to `sendRendered`.
 */
export function renderAnswer(reply: FastifyReply, envelope: { timestamp: number }): RenderedAnswer {
  const text = reply.serialize({ ...envelope, timestamp: 0 });
  if (typeof text !== 'string' || !text.endsWith(TAIL)) {
    throw new Error(`the response schema of ${reply.request.routeOptions.url} does not end with timestamp`);
  }
  return new RenderedAnswer(text.slice(0, -2));
}

/** Sends a rendered answer with the current timestamp, as the serializer would have written it. */
export function sendRendered(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(answer.body(nowSeconds()));
}
