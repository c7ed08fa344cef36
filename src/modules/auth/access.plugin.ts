import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Context } from '../../context.ts';
import { RequestVersion } from '../../db/exact-cache.ts';
import { type DisablableOperation, isOperationEnabled, operationDisabled } from '../../http/disabled.ts';
import { ApiError, objectNotFound } from '../../http/errors.ts';
import { type AuthContext, authenticate } from './auth.service.ts';

/** Access level of a route: the spec's Public, Logged, Owner, plus admin-only and no check at all. */
export type Access = 'none' | 'public' | 'logged' | 'owner' | 'admin';

/** Loads the owner uuid of the addressed item (undefined when it does not exist or is not visible). */
export type OwnerResolver = (request: FastifyRequest, ctx: Context) => Promise<string | null | undefined>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Required on every route. */
    access?: Access;
    /** With access 'owner': who owns the addressed item. */
    owner?: OwnerResolver;
    /** With access 'owner': the kind named in the 404 message. */
    ownerKind?: string;
    /** With access 'owner': admins pass too. */
    adminOverride?: boolean;
    /** A switchable operation, off unless ENABLED_OPERATIONS names it. */
    operation?: DisablableOperation;
    /** Switchable operations one route serves together, each checked by the route itself (for the reference only). */
    operations?: DisablableOperation[];
  }
  interface FastifyRequest {
    auth: AuthContext | null;
    /**
     * The data version this request's cached reads share (the token check's and the answer's): read once, at the
     * token check. For reads only: a handler that writes must not pass it to a read after its write.
     */
    readVersion: RequestVersion | null;
  }
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const m = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  return m?.[1];
}

/** The checks every operation runs: switched-off operations, the client credentials check, the guest check, the owner check. */
async function accessPlugin(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  app.decorateRequest('auth', null);
  app.decorateRequest('readVersion', null);

  app.addHook('onRoute', (route) => {
    const config = (route.config ?? {}) as NonNullable<typeof route.config>;
    const access = config.access;
    if (access === undefined) {
      throw new Error(`Route ${route.method} ${route.url} declares no access level (config.access)`);
    }
    if (access === 'owner' && !config.owner) {
      throw new Error(`Route ${route.method} ${route.url} is owner-only but has no owner resolver`);
    }
    const onRequest = [];
    const operation = config.operation;
    if (operation) {
      onRequest.push(async () => {
        if (!isOperationEnabled(ctx.config.ENABLED_OPERATIONS, operation)) throw operationDisabled(operation);
      });
    }
    if (access !== 'none') onRequest.push(checkToken(access));
    const existing = route.onRequest
      ? Array.isArray(route.onRequest)
        ? route.onRequest
        : [route.onRequest]
      : [];
    route.onRequest = [...onRequest, ...existing] as typeof route.onRequest;
    if (access === 'owner') {
      const preHandler = route.preHandler
        ? Array.isArray(route.preHandler)
          ? route.preHandler
          : [route.preHandler]
        : [];
      route.preHandler = [
        checkOwner(config.owner as OwnerResolver, config.ownerKind ?? 'item', config.adminOverride ?? false),
        ...preHandler,
      ] as typeof route.preHandler;
    }
  });

  function checkToken(access: Access) {
    return async (request: FastifyRequest, reply: FastifyReply) => {
      const token = bearerToken(request);
      if (!token) {
        throw new ApiError(
          'unauthenticated',
          'This operation needs a bearer token: send Authorization: Bearer TOKEN (get one from POST /oauth/token).',
          undefined,
          { 'WWW-Authenticate': 'Bearer' },
        );
      }
      const version = new RequestVersion(ctx.db, ctx.dialect);
      request.readVersion = version;
      const auth = await authenticate(ctx, token, version);
      request.auth = auth;
      reply.header('cache-control', 'no-store');
      if (access === 'public') return;
      if (auth.userUuid === null) {
        throw new ApiError(
          'login_required',
          'This operation needs a logged-in user; a guest token is not enough. Log in with the password grant of POST /oauth/token.',
        );
      }
      if (access === 'admin' && auth.role !== 'admin') {
        throw new ApiError(
          'forbidden',
          'This operation is for administrators only; an operator can grant the role with `npm run cli -- users role USERNAME admin`.',
        );
      }
    };
  }

  function checkOwner(resolve: OwnerResolver, kind: string, adminOverride: boolean) {
    return async (request: FastifyRequest) => {
      const auth = request.auth as AuthContext;
      const owner = await resolve(request, ctx);
      if (owner === undefined) throw objectNotFound(kind);
      if (adminOverride && auth.role === 'admin') return;
      // A foreign item answers exactly like a missing one: its existence is not revealed.
      if (owner !== auth.userUuid) throw objectNotFound(kind);
    };
  }
}

export default fp(accessPlugin, { name: 'access' });
