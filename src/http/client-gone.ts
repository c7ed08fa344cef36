import type { FastifyRequest } from 'fastify';

/**
 * Whether the client of a request has closed its connection, so no answer can reach it: the server destroys or
 * ends the socket when the client ends its side. Requests injected in tests have no real socket and never go.
 */
export function clientGone(request: FastifyRequest): () => boolean {
  const socket = request.raw.socket as { destroyed?: boolean; writable?: boolean } | null | undefined;
  return () => socket?.destroyed === true || socket?.writable === false;
}
