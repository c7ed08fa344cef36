import { type Context, locksRows } from '../../context.ts';
import { nowIso } from '../../db/time.ts';
import { ApiError } from '../../http/errors.ts';
import { findUserByLogin } from '../user/user.repository.ts';
import * as repo from './auth.repository.ts';
import { type IssuedTokens, issueTokens, verifyClient } from './auth.service.ts';
import { accountKey, addressLimitKey, type LoginLimiter } from './login-limiter.ts';
import type { RevokeRequest, TokenRequest } from './oauth.schemas.ts';
import { burnVerification, verifyPassword } from './password.ts';
import { hashToken } from './token.ts';

/** An RFC 6749 error: answered as { error, error_description } with its status, never in the envelope. */
export class OAuthError extends Error {
  readonly status: number;
  readonly error: string;
  readonly headers: Record<string, string>;

  constructor(status: number, error: string, description: string, headers: Record<string, string> = {}) {
    super(description);
    this.name = 'OAuthError';
    this.status = status;
    this.error = error;
    this.headers = headers;
  }
}

const invalidRequest = (d: string) => new OAuthError(400, 'invalid_request', d);
const invalidGrant = (d: string) => new OAuthError(400, 'invalid_grant', d);
/** A login that could not be checked now (no limiter counters, or a full hashing queue): retry in a second. */
const loginsUnavailable = () =>
  new OAuthError(503, 'temporarily_unavailable', 'Logins are briefly unavailable; retry in a moment.', {
    'Retry-After': '1',
  });

/** How the client authenticated: HTTP Basic, body fields, or neither. */
export interface ClientCredentials {
  basic?: { id: string; secret: string } | 'malformed';
  bodyId?: string;
  bodySecret?: string;
}

/** An authenticated, active client. */
export interface AuthenticatedClient {
  id: string;
  firstParty: boolean;
}

/** RFC 6749 2.3: exactly one authentication method; unknown, wrong or disabled clients are invalid_client. */
export async function authenticateClient(
  ctx: Context,
  creds: ClientCredentials,
): Promise<AuthenticatedClient> {
  const usedBasic = creds.basic !== undefined;
  const fail = (d: string) =>
    new OAuthError(401, 'invalid_client', d, usedBasic ? { 'WWW-Authenticate': 'Basic realm="oauth"' } : {});
  // A body client_id beside Basic only names the client (RFC 6749 3.2.1), which must be the same one; a body secret
  // would be a second method.
  const basicId = typeof creds.basic === 'object' ? creds.basic.id : undefined;
  if (
    usedBasic &&
    (creds.bodySecret !== undefined || (creds.bodyId !== undefined && creds.bodyId !== basicId))
  ) {
    throw invalidRequest(
      'Authenticate the client one way only: HTTP Basic or client_id/client_secret in the body (a client_id beside HTTP Basic must name the same client).',
    );
  }
  if (creds.basic === 'malformed') {
    throw fail('The Authorization header is not valid HTTP Basic: send base64(client_id:client_secret).');
  }
  const id = creds.basic?.id ?? creds.bodyId;
  const secret = creds.basic?.secret ?? creds.bodySecret;
  if (!id || secret === undefined) {
    throw fail(
      'Client authentication is missing: send HTTP Basic (client_id:client_secret) or client_id and client_secret.',
    );
  }
  const client = await verifyClient(ctx.db, id, secret);
  if (!client) throw fail('Unknown client or wrong client secret.');
  if (client.disabled)
    throw fail('This client is disabled; ask the operator to enable it or use another one.');
  return { id: client.id, firstParty: client.first_party === 1 };
}

/** The dependencies of the password grant besides the context. */
export interface GrantEnv {
  limiter: LoginLimiter;
  /** The grouped client address (see addressKey). */
  address: string;
}

/** POST /oauth/token: runs the requested grant for an authenticated client. */
export async function grantToken(
  ctx: Context,
  client: AuthenticatedClient,
  body: TokenRequest,
  env: GrantEnv,
): Promise<IssuedTokens> {
  switch (body.grant_type) {
    case 'client_credentials':
      return issueTokens(ctx, ctx.db, client.id, null);
    case 'password':
      return passwordGrant(ctx, client, body, env);
    case 'refresh_token':
      return refreshGrant(ctx, client, body);
    case '':
      throw invalidRequest('grant_type is empty: use client_credentials, password or refresh_token.');
    default:
      throw new OAuthError(
        400,
        'unsupported_grant_type',
        `grant_type ${JSON.stringify(body.grant_type.slice(0, 40))} is not supported; use client_credentials (a guest token), password (a user token, first-party clients) or refresh_token.`,
      );
  }
}

async function passwordGrant(
  ctx: Context,
  client: AuthenticatedClient,
  body: TokenRequest,
  env: GrantEnv,
): Promise<IssuedTokens> {
  // RFC 9700 2.4: the password grant exposes the user's credentials to the client, so only clients run by the
  // operator of this service (first-party) may use it.
  if (!client.firstParty) {
    throw new OAuthError(
      400,
      'unauthorized_client',
      'The password grant is only for first-party clients; this client may use client_credentials.',
    );
  }
  if (!body.username || body.password === undefined || body.password === '') {
    throw invalidRequest('The password grant needs username (or email) and password.');
  }
  const login = body.username.trim().toLowerCase();
  const user = await findUserByLogin(ctx.db, login);
  // Three budgets: the login as typed, the client address, and the account, which its username and its email share
  // so that switching spellings gains no guesses.
  const keys = [accountKey(`login:${login}`), addressLimitKey(env.address)];
  if (user) keys.push(accountKey(`user:${user.uuid}`));
  // Checked before the password, so a locked login answers 429 whether the guess is right or not.
  const gate = await env.limiter.reserve(keys).catch(() => {
    // Without its counters the login limit cannot be enforced; refuse rather than allow unlimited guessing.
    throw loginsUnavailable();
  });
  if (gate.over[0] || gate.over[1]) {
    // The wait of those two counters only: the account's own, which only an existing login has, would tell one.
    const wait = Math.max(...[0, 1].filter((i) => gate.over[i]).map((i) => gate.resets[i] ?? 1));
    throw new OAuthError(
      429,
      'rate_limited',
      `Too many failed logins for this account or from this address; wait ${wait} seconds.`,
      { 'Retry-After': String(wait) },
    );
  }
  // The account is over its budget through its other spelling: refused as a wrong password, with the same work, not
  // 429, which would tell anyone who locked a username which email belongs to it (docs/identity.md, "Rate limits").
  const locked = !gate.allowed;
  let valid = false;
  try {
    // An unknown user costs one verification too, so time does not tell which usernames exist.
    if (user && !locked) valid = await verifyPassword(body.password, user.password_hash);
    else await burnVerification(body.password);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 'unavailable')) throw error;
    // Refused by a full hashing queue, the attempt checked nothing: it gives its place in the budget back.
    await env.limiter.refund(keys).catch(() => {});
    throw loginsUnavailable();
  }
  if (!user || !valid) throw invalidGrant('The username (or email) or the password is wrong.');
  // A lost refund only makes the count stricter; the login itself succeeded.
  await env.limiter.refund(keys).catch(() => {});
  return ctx.db.transaction().execute(async (trx) => {
    // The hash was verified outside any transaction (hashing takes a while): a password change or a delete that
    // committed since then refuses this login, as it would have refused it a moment later, instead of leaving a
    // session the change's revocation never saw.
    const current = await repo.findPasswordHashForTokens(trx, user.uuid, locksRows(ctx));
    if (current !== user.password_hash)
      throw invalidGrant('The username (or email) or the password is wrong.');
    return issueTokens(ctx, trx, client.id, user.uuid);
  });
}

async function refreshGrant(
  ctx: Context,
  client: AuthenticatedClient,
  body: TokenRequest,
): Promise<IssuedTokens> {
  if (!body.refresh_token) throw invalidRequest('The refresh_token grant needs refresh_token.');
  const hash = hashToken(body.refresh_token);
  const row = await repo.findRefreshToken(ctx.db, hash);
  const invalid = invalidGrant('The refresh token is unknown, expired or revoked. Log in again.');
  if (!row || row.client_id !== client.id || row.user_uuid === null) throw invalid;
  if (row.revoked_at !== null) throw invalid;
  const userUuid = row.user_uuid;
  const reused = async () => {
    // A spent refresh token came back: it was copied. Everything issued from this login is revoked.
    await revokeLogin(ctx, userUuid, row.family_id);
    return invalidGrant(
      'This refresh token was already used; every token of this login is now revoked. Log in again.',
    );
  };
  if (row.used_at !== null) throw await reused();
  if (row.expires_at <= nowIso()) throw invalid;
  const issued = await ctx.db.transaction().execute(async (trx) => {
    if (locksRows(ctx)) await repo.lockUserForTokens(trx, userUuid, 'refresh');
    // Two requests racing with the same token: only one marks it used; the other counts as reuse. A revocation
    // committed since the read above leaves it unmarked too.
    if (!(await repo.markTokenUsed(trx, hash, nowIso()))) {
      const current = await repo.findRefreshToken(trx, hash);
      // Gone (its user was deleted meanwhile) or revoked: refused as such, not as a copied token.
      return !current || current.revoked_at ? 'revoked' : 'reused';
    }
    return issueTokens(ctx, trx, client.id, userUuid, row.family_id);
  });
  if (issued === 'revoked') throw invalid;
  if (issued === 'reused') throw await reused();
  return issued;
}

/** Revokes every token of one login (a refresh chain and its access tokens), after any refresh of it in flight. */
async function revokeLogin(ctx: Context, userUuid: string | null, familyId: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const user = locksRows(ctx) ? userUuid : null;
    if (user !== null) await repo.lockUserForTokens(trx, user, 'revoke');
    await repo.revokeTokenFamily(trx, familyId, nowIso());
  });
}

/** POST /oauth/revoke (RFC 7009): unknown tokens and tokens of other clients are left alone and still answer 200. */
export async function revokeTokenRequest(
  ctx: Context,
  client: AuthenticatedClient,
  body: RevokeRequest,
): Promise<void> {
  if (!body.token) throw invalidRequest('token is required: the access or refresh token to revoke.');
  const row = await repo.findTokenByHash(ctx.db, hashToken(body.token));
  if (!row || row.client_id !== client.id) return;
  // Revoking a refresh token ends the whole login (its chain and the access tokens issued from it).
  if (row.kind === 'refresh') await revokeLogin(ctx, row.user_uuid, row.family_id);
  else await repo.revokeToken(ctx.db, row.token_hash, nowIso());
}
