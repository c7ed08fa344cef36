import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidField } from './errors.ts';

const AUTHORIZATION = 'authorization';

/**
 * onRequest hook: an `Authorization` header given more than once is a 400. Node keeps the first one, while a proxy,
 * gateway or log in front may read the last: the two would judge different callers (as a repeated query parameter
 * would, which is refused too).
 */
export function rejectRepeatedAuthorization(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  const raw = request.raw.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === AUTHORIZATION.length && name.toLowerCase() === AUTHORIZATION) seen++;
  }
  done(seen > 1 ? invalidField('Authorization', 'the header was given more than once; send one') : undefined);
}
