import type { FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;
// Labels whose bytes UTF-8 reads as meant (ASCII is its subset); empty: no charset given.
const UTF8_LABELS = new Set(['', 'utf-8', 'utf8', 'us-ascii']);

/**
 * A 415 for a body whose Content-Type names a charset other than UTF-8, or undefined. JSON and form bodies are read
 * as UTF-8 (RFC 8259 8.1; the form of the WHATWG URL standard); one labelled otherwise would be read as something it
 * is not.
 */
export function charsetRefusal(request: FastifyRequest, kind: string): ApiError | undefined {
  const charset = CHARSET.exec(String(request.headers['content-type'] ?? ''))?.[1]?.toLowerCase() ?? '';
  if (UTF8_LABELS.has(charset)) return undefined;
  return new ApiError(
    'unsupported_media_type',
    `${kind} bodies are read as UTF-8; ${JSON.stringify(charset.slice(0, 40))} is not accepted: send UTF-8 (or no charset).`,
  );
}

// Fatal: a byte sequence that is not UTF-8 throws, where the default decoder would put U+FFFD in its place and the
// text would be stored other than it was sent.
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The text of a body's bytes, read as UTF-8; throws a 400 when they are not UTF-8. */
export function utf8Text(bytes: Buffer): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new ApiError(
      'invalid_request',
      'The request body is not valid UTF-8 (a byte sequence no UTF-8 text has, such as Latin-1 "é" as one byte); send its text encoded as UTF-8.',
    );
  }
}
