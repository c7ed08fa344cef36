import type { FastifyReply, FastifyRequest } from 'fastify';
import { isPlainObject } from './text-input.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Names of parameters and fields that hold uuids: `uuid`, `user_uuid`, `uuids`, `exclude_user_uuids`. */
const UUID_NAME = /(^|_)uuids?$/;
const MAX_DEPTH = 4;

/** A uuid, or a comma list of them (`uuids=`), in lower case; anything else unchanged. */
function lower(value: string): string {
  if (!/[A-F]/.test(value)) return value;
  const parts = value.split(',');
  return parts.every((p) => UUID.test(p.trim())) ? value.toLowerCase() : value;
}

/**
 * Lower-cases the uuids of a parsed request part in place: values under uuid-named keys (and, in filterby, under a
 * uuid-named property), strings or arrays of strings. Other text is never touched, even when it looks like a uuid.
 */
function lowerUuids(part: unknown, uuidContext: boolean, depth: number): void {
  if (!isPlainObject(part) || depth > MAX_DEPTH) return;
  const record = part;
  for (const key of Object.keys(record)) {
    const value = record[key];
    const named = uuidContext || UUID_NAME.test(key);
    if (typeof value === 'string') {
      if (named) record[key] = lower(value);
    } else if (Array.isArray(value)) {
      if (named) record[key] = value.map((v) => (typeof v === 'string' ? lower(v) : v));
    } else {
      // filterby[user_uuid][eq]=...: the property names the value's kind, the operator below it does not.
      lowerUuids(value, named, depth + 1);
    }
  }
}

/**
 * Makes uuids case-insensitive on every route (as RFC 9562 reads them, and as the schemas accept any case): the
 * path parameters, query and body are lower-cased where a uuid is expected, so an upper-case uuid finds what its
 * lower-case spelling finds. Before, the tag routes lower-cased them and the others answered 404.
 */
export function lowerCaseUuids(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  lowerUuids(request.params, false, 0);
  lowerUuids(request.query, false, 0);
  lowerUuids(request.body, false, 0);
  done();
}
