import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { Context } from '../../context.ts';
import { ApiError } from '../../http/errors.ts';
import { addressKey } from './client-address.ts';
import { hashToken } from './token.ts';

/** Paths that are never limited: probes, metrics and the API reference. */
const EXEMPT = /^\/(health|ready|metrics|openapi\.json|docs)(\/|$)/;

/** The rate-limit key: the token's hash when a bearer token is sent, otherwise the (grouped) client address. */
export function rateLimitKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const m = typeof header === 'string' ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
  return m ? `t:${hashToken(m[1] as string)}` : `a:${addressKey(request.ip)}`;
}

/**
 * The API-wide limit: RATE_LIMIT_PER_MINUTE requests per token (or per address without one), counted in Redis when
 * one is given so every process shares the budget. It covers every route registered after this plugin, and runs
 * before the token check so a flood costs no database lookups.
 */
async function rateLimitPlugin(
  app: FastifyInstance,
  opts: { ctx: Context; redis?: Redis; prefix: string },
): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    max: opts.ctx.config.RATE_LIMIT_PER_MINUTE,
    timeWindow: 60_000,
    enableDraftSpec: true,
    keyGenerator: rateLimitKey,
    ...(opts.redis ? { redis: opts.redis, nameSpace: `${opts.prefix}rl:` } : {}),
    // An unreachable Redis must not take the whole API down with it.
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        'rate_limited',
        `Too many requests: at most ${context.max} per minute per token. Retry in ${context.after}.`,
      ),
  });
  const limit = app.rateLimit();
  app.addHook('onRoute', (route) => {
    if (EXEMPT.test(route.url ?? '')) return;
    const existing = route.onRequest
      ? Array.isArray(route.onRequest)
        ? route.onRequest
        : [route.onRequest]
      : [];
    route.onRequest = [limit, ...existing] as typeof route.onRequest;
  });
}

export default fp(rateLimitPlugin, { name: 'api-rate-limit' });
