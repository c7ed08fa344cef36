import type { FastifyRequest } from 'fastify';

/** preValidation hook: a missing body is an empty one, so operations without properties accept a bare POST. */
export async function emptyBodyIsObject(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {};
}
