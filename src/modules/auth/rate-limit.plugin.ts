import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { Context } from '../../context.ts';
import { ApiError } from '../../http/errors.ts';
import { addressKey } from './client-address.ts';

/** Paths that are never limited: probes, metrics and the API reference. */
const EXEMPT = /^\/(health|ready|metrics|openapi\.json|docs)(\/|$)/;

/** The token endpoint, limited per address on its own budget. */
const TOKEN_ENDPOINT = '/oauth/token';
/** The revocation endpoint, which checks a client's secret as the token endpoint does, and shares its budget. */
const REVOCATION = '/oauth/revoke';
/** Registration, limited per address on its own budget: each one hashes a password. */
const REGISTRATION = '/users';
/** The profile update, whose password changes are limited per user and per address: each one hashes too. */
const PROFILE_UPDATE = '/users/:uuid/update';

/** The key of the per-address limit, which every request counts in whatever token it sends. */
function addressRateKey(request: FastifyRequest): string {
  return `ip:${addressKey(request.ip)}`;
}

/**
 * The key of the per-token limit, taken only after the token check: the hash of a token that proved valid, otherwise
 * (routes without a token check, such as /oauth/*) the client address. An unknown bearer string never gets a key of
 * its own, so sending random tokens cannot buy fresh budgets.
 */
function tokenRateKey(request: FastifyRequest): string {
  const hash = request.auth?.tokenHash;
  return hash ? `t:${hash}` : `a:${addressKey(request.ip)}`;
}

type Limiter = (request: FastifyRequest) => Promise<
  | { isAllowed: true; key: string }
  | {
      isAllowed: false;
      key: string;
      max: number;
      remaining: number;
      ttlInSeconds: number;
      isExceeded: boolean;
    }
>;

/** The smallest remaining budget reported on each request so far: the headers show the tightest limit. */
const reported = new WeakMap<FastifyRequest, number>();

/**
 * The API-wide limits, counted in Redis when one is given so every process shares the budgets:
 * - per client address: 2 x RATE_LIMIT_PER_MINUTE requests per minute on every route, before anything else (so a
 *   flood of made-up tokens costs no database lookups and cannot exceed it);
 * - per token: RATE_LIMIT_PER_MINUTE per valid token (per address on routes without a token), after the token check;
 * - POST /oauth/token and /oauth/revoke together: TOKEN_REQUESTS_PER_MINUTE per address, so guest tokens cannot be
 *   farmed for fresh budgets, nor client secrets guessed on revocations at the address budget's pace;
 * - POST /users: REGISTRATIONS_PER_MINUTE per address, so sign-ups cannot fill the password hashing queue that
 *   logins wait in;
 * - POST /users/{uuid}/update with a password: PASSWORD_CHANGES_PER_MINUTE per user and per address, for the same
 *   queue (120 changes at once from one token made other users' logins wait a second or answer 503).
 * They cover every route registered after this plugin.
 */
async function rateLimitPlugin(
  app: FastifyInstance,
  opts: { ctx: Context; redis?: Redis; prefix: string },
): Promise<void> {
  const config = opts.ctx.config;
  await app.register(rateLimit, {
    global: false,
    max: config.RATE_LIMIT_PER_MINUTE,
    timeWindow: 60_000,
    ...(opts.redis ? { redis: opts.redis, nameSpace: `${opts.prefix}rl:` } : {}),
    // An unreachable Redis must not take the whole API down with it.
    skipOnError: true,
  });
  const byAddress = app.createRateLimit({
    max: config.RATE_LIMIT_PER_MINUTE * 2,
    keyGenerator: addressRateKey,
  }) as Limiter;
  const byToken = app.createRateLimit({
    max: config.RATE_LIMIT_PER_MINUTE,
    keyGenerator: tokenRateKey,
  }) as Limiter;
  const tokenEndpoint = app.createRateLimit({
    max: config.TOKEN_REQUESTS_PER_MINUTE,
    keyGenerator: (request) => `oauth:${addressKey(request.ip)}`,
  }) as Limiter;

  const registration = app.createRateLimit({
    max: config.REGISTRATIONS_PER_MINUTE,
    keyGenerator: (request) => `register:${addressKey(request.ip)}`,
  }) as Limiter;

  const passwordsByUser = app.createRateLimit({
    max: config.PASSWORD_CHANGES_PER_MINUTE,
    keyGenerator: (request) => `password:user:${request.auth?.userUuid}`,
  }) as Limiter;
  const passwordsByAddress = app.createRateLimit({
    max: config.PASSWORD_CHANGES_PER_MINUTE,
    keyGenerator: (request) => `password:${addressKey(request.ip)}`,
  }) as Limiter;

  function enforce(limiter: Limiter, what: string) {
    return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const r = await limiter(request);
      if (r.isAllowed) return;
      // skipOnError: a failed Redis call reports max 0 and must let the request through.
      if (!r.isExceeded) {
        const tightest = reported.get(request);
        if (tightest === undefined || r.remaining <= tightest) {
          reported.set(request, r.remaining);
          reply.header('ratelimit-limit', r.max);
          reply.header('ratelimit-remaining', r.remaining);
          reply.header('ratelimit-reset', r.ttlInSeconds);
        }
        return;
      }
      reply.header('ratelimit-limit', r.max);
      reply.header('ratelimit-remaining', 0);
      reply.header('ratelimit-reset', r.ttlInSeconds);
      reply.header('retry-after', r.ttlInSeconds);
      // Refused before the token check that marks authenticated answers: never to be stored by a cache either.
      reply.header('cache-control', 'no-store');
      throw new ApiError(
        'rate_limited',
        `Too many requests: at most ${r.max} per minute ${what}. Retry in ${r.ttlInSeconds} seconds.`,
      );
    };
  }
  const addressHook = enforce(byAddress, 'from one client address');
  const tokenHook = enforce(byToken, 'per token');
  const tokenEndpointHook = enforce(
    tokenEndpoint,
    'to POST /oauth/token and /oauth/revoke from one client address',
  );
  const registrationHook = enforce(registration, 'to POST /users from one client address');
  const passwordAddressHook = enforce(passwordsByAddress, 'to change a password from one client address');
  const passwordUserHook = enforce(passwordsByUser, 'to change one user’s password');
  // After validation and the Owner check (both before this hook), so neither a malformed body nor someone else's
  // uuid spends the budget; only a body that sets a password counts.
  const passwordChange = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if ((request.body as { password?: unknown } | undefined)?.password === undefined) return;
    await passwordAddressHook(request, reply);
    await passwordUserHook(request, reply);
  };
  // POST routes with a per-address budget of their own, counted after the address budget.
  const ownBudgets = new Map([
    [TOKEN_ENDPOINT, tokenEndpointHook],
    [REVOCATION, tokenEndpointHook],
    [REGISTRATION, registrationHook],
  ]);

  app.addHook('onRoute', (route) => {
    if (EXEMPT.test(route.url ?? '')) return;
    const existing = route.onRequest
      ? Array.isArray(route.onRequest)
        ? route.onRequest
        : [route.onRequest]
      : [];
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const own = methods.includes('POST') ? ownBudgets.get(route.url) : undefined;
    const first = own ? [addressHook, own] : [addressHook];
    // The access plugin's hooks (registered earlier) already head `existing`, so the per-token limit runs after the
    // token check and sees request.auth.
    route.onRequest = [...first, ...existing, tokenHook] as typeof route.onRequest;
    if (route.url === PROFILE_UPDATE && methods.includes('POST')) {
      const handlers = route.preHandler
        ? Array.isArray(route.preHandler)
          ? route.preHandler
          : [route.preHandler]
        : [];
      route.preHandler = [...handlers, passwordChange] as typeof route.preHandler;
    }
  });
}

export default fp(rateLimitPlugin, { name: 'api-rate-limit' });
