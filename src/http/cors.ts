import type { FastifyCorsOptions } from '@fastify/cors';
import type { FastifyRequest } from 'fastify';

/** Every method the API's routes answer: HEAD with each GET, PUT, PATCH and DELETE on the tag writes. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The answer headers a script on an allowed origin may read beyond the CORS-safelisted ones: the request id to
 * quote, the rate-limit state and wait, and the authentication scheme of a 401.
 */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'WWW-Authenticate',
];

/** Whether an OPTIONS request is a CORS preflight: it names its origin and the method it asks about. */
function isPreflight(request: FastifyRequest): boolean {
  return (
    request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined
  );
}

/**
 * @fastify/cors options for the origins of CORS_ORIGINS. An OPTIONS request that is not a preflight gets no CORS
 * handling and reaches the routes (405 with Allow, or 404, in the envelope), where the plugin's strict mode would
 * answer a text/plain 400 outside the envelope and its lax mode a preflight answer to a request that asked for none.
 */
export function corsOptions(origins: string[]): FastifyCorsOptions {
  const allowed: FastifyCorsOptions = {
    origin: origins,
    methods: CORS_METHODS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
  };
  const off: FastifyCorsOptions = { ...allowed, origin: false };
  return {
    delegator: (request, callback) =>
      callback(null, request.method === 'OPTIONS' && !isPreflight(request) ? off : allowed),
  };
}
