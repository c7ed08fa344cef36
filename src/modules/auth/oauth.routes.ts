import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import type { Context } from '../../context.ts';
import { isUnavailable, validationDetails } from '../../http/error-handler.ts';
import { ApiError } from '../../http/errors.ts';
import { addressKey } from './client-address.ts';
import type { LoginLimiter } from './login-limiter.ts';
import {
  OAuthErrorResponse,
  RevokeBody,
  type RevokeRequest,
  RevokeResponse,
  TokenBody,
  type TokenRequest,
  TokenResponse,
} from './oauth.schemas.ts';
import {
  authenticateClient,
  type ClientCredentials,
  grantToken,
  OAuthError,
  revokeTokenRequest,
} from './oauth.service.ts';

/** Whether a text holds a control character (C0 or DEL). */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** One form-encoded part of HTTP Basic credentials, decoded; undefined when it holds a control character. */
function formDecode(s: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    // Kept as sent: clients that do not form-encode a secret with a `%` in it have always been let in.
    decoded = s;
  }
  // No client id or secret holds a control character; PostgreSQL refuses a NUL in text outright (a 500 before).
  return hasControl(decoded) ? undefined : decoded;
}

/** Client credentials from HTTP Basic (RFC 6749 2.3.1: both parts form-encoded) and the body. */
function clientCredentials(request: FastifyRequest, body: { client_id?: string; client_secret?: string }) {
  const creds: ClientCredentials = { bodyId: body.client_id, bodySecret: body.client_secret };
  const header = request.headers.authorization;
  if (typeof header === 'string' && /^basic\b/i.test(header.trim())) {
    const m = /^basic +([A-Za-z0-9+/]+=*) *$/i.exec(header.trim());
    const decoded = m ? Buffer.from(m[1] as string, 'base64').toString('utf8') : '';
    const i = decoded.indexOf(':');
    const id = i > 0 ? formDecode(decoded.slice(0, i)) : undefined;
    const secret = i > 0 ? formDecode(decoded.slice(i + 1)) : undefined;
    creds.basic = id !== undefined && secret !== undefined ? { id, secret } : 'malformed';
  }
  return creds;
}

const ERRORS = {
  400: OAuthErrorResponse,
  401: OAuthErrorResponse,
  429: OAuthErrorResponse,
  503: OAuthErrorResponse,
};

/** RFC 6749 token endpoint and RFC 7009 revocation endpoint; their answers use the RFC shapes, not the envelope. */
export default async function oauthRoutes(
  app: FastifyInstance,
  opts: { ctx: Context; limiter: LoginLimiter },
): Promise<void> {
  const { ctx, limiter } = opts;

  app.addHook('onRequest', async (_request, reply) => {
    // RFC 6749 5.1: token responses must not be cached.
    reply.header('cache-control', 'no-store');
    reply.header('pragma', 'no-cache');
  });

  app.setErrorHandler(
    (error: FastifyError & { validation?: Parameters<typeof validationDetails>[0] }, request, reply) => {
      if (error instanceof OAuthError) {
        for (const [k, v] of Object.entries(error.headers)) reply.header(k, v);
        return reply.status(error.status).send({ error: error.error, error_description: error.message });
      }
      if (error.validation) {
        const details = validationDetails(error.validation, error.validationContext);
        return reply.status(400).send({
          error: 'invalid_request',
          error_description: `The request is not valid: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`,
        });
      }
      if (error instanceof ApiError && error.statusCode === 400) {
        // The app's own checks before validation (a field of the wrong JSON type, a list for one value): their
        // message names the field.
        return reply.status(400).send({ error: 'invalid_request', error_description: error.message });
      }
      if (error.statusCode === 429) {
        // The API-wide limit (its RateLimit-* and Retry-After headers are already set).
        return reply.status(429).send({
          error: 'rate_limited',
          error_description: 'Too many requests; wait for the time in Retry-After and try again.',
        });
      }
      if (error.statusCode === 400) {
        return reply
          .status(400)
          .send({ error: 'invalid_request', error_description: 'The request body could not be read.' });
      }
      if (isUnavailable(error as never)) {
        // Answered here: the 503 this route declares is the RFC shape, which the envelope does not fit.
        request.log.error({ err: error }, 'storage unavailable');
        reply.header('retry-after', '1');
        return reply.status(503).send({
          error: 'temporarily_unavailable',
          error_description: 'The service is temporarily unavailable; retry in a moment.',
        });
      }
      // Anything else (413, 415, a bug) gets the app's envelope.
      throw error;
    },
  );

  app.post(
    '/oauth/token',
    {
      config: { access: 'none' },
      schema: {
        tags: ['oauth'],
        summary:
          'Get an access token (RFC 6749): client_credentials, password (first-party clients), refresh_token',
        description:
          'Client authentication: HTTP Basic (client_id:client_secret) or client_id and client_secret in the body. ' +
          'client_credentials gives a guest token; password (username or email) gives a user access token and a ' +
          'refresh token, and only to first-party clients (RFC 9700 forbids the password grant for third parties); ' +
          'refresh_token rotates the refresh token, and presenting a spent one revokes every token of that login. ' +
          'Errors use the RFC 6749 shape {error, error_description}.',
        security: [],
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: TokenBody,
        response: { 200: TokenResponse, ...ERRORS },
      },
    },
    async (request) => {
      const body = request.body as TokenRequest;
      const client = await authenticateClient(ctx, clientCredentials(request, body));
      return grantToken(ctx, client, body, { limiter, address: addressKey(request.ip) });
    },
  );

  app.post(
    '/oauth/revoke',
    {
      config: { access: 'none' },
      schema: {
        tags: ['oauth'],
        summary: 'Revoke an access or refresh token (RFC 7009)',
        description:
          'Client-authenticated like /oauth/token. Answers 200 even for unknown tokens. Revoking a refresh token ' +
          'revokes every token of that login; revoking an access token revokes that token only.',
        security: [],
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: RevokeBody,
        response: { 200: RevokeResponse, ...ERRORS },
      },
    },
    async (request) => {
      const body = request.body as RevokeRequest;
      const client = await authenticateClient(ctx, clientCredentials(request, body));
      await revokeTokenRequest(ctx, client, body);
      return {};
    },
  );
}
