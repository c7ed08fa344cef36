import { createHash, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type Context, readCacheScope } from '../../context.ts';
import type { Database, Db } from '../../db/database.ts';
import { cachedRead, type RequestVersion } from '../../db/exact-cache.ts';
import { isoIn, nowIso, uuidv7 } from '../../db/time.ts';
import { ApiError } from '../../http/errors.ts';
import * as repo from './auth.repository.ts';
import { generateToken, hashToken } from './token.ts';

/** Who is calling: the client, and the user unless it is a guest token. */
export interface AuthContext {
  clientId: string;
  userUuid: string | null;
  role: string | null;
  tokenHash: string;
}

const unauthenticated = (message: string) =>
  new ApiError('unauthenticated', message, undefined, { 'WWW-Authenticate': 'Bearer' });

type TokenCheckRow = Awaited<ReturnType<typeof repo.findTokenForCheck>>;

/**
 * The token row of a hash, from the exact read cache while nothing it reads changed since (a revocation, a deleted
 * user, a changed role or a disabled client moves the auth version, so it is seen by the very next request).
 */
async function findTokenRow(
  ctx: Context,
  tokenHash: string,
  version: RequestVersion | null | undefined,
): Promise<{ row: TokenCheckRow; expiresAtMs: number }> {
  // Kept under the auth version: a post or a reaction leaves every token check as it was.
  const scope = { ...readCacheScope(ctx, version), keyedBy: 'auth' as const };
  // Wrapped: an unknown token (undefined) is an answer worth keeping too. The expiry is parsed once per read, as
  // every use compares it with the clock.
  return cachedRead(scope, 'token', tokenHash, false, async () => {
    const row = await repo.findTokenForCheck(ctx.db, tokenHash);
    return { row, expiresAtMs: row ? Date.parse(row.expires_at) : 0 };
  });
}

/**
 * The client credentials check: the bearer token is known, unexpired, unrevoked and its client active. `version`:
 * the request's data version, shared with its other cached reads.
 */
export async function authenticate(
  ctx: Context,
  rawToken: string,
  version?: RequestVersion | null,
): Promise<AuthContext> {
  const { row, expiresAtMs } = await findTokenRow(ctx, hashToken(rawToken), version);
  if (row?.kind !== 'access')
    throw unauthenticated('The bearer token is not known. Get one from POST /oauth/token.');
  // Before the revocation: disabling a client revokes its tokens too, and the reason to give is the client.
  if (row.client_disabled)
    throw new ApiError(
      'invalid_client',
      'The client this token was issued to is disabled; ask the operator to enable it, or get a token from another client.',
      undefined,
      // A 401 names its scheme (RFC 9110 15.5.2), as every other 401 here does.
      { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
    );
  if (row.revoked_at !== null)
    throw unauthenticated('The bearer token was revoked. Get a new one from POST /oauth/token.');
  // Checked at every use, cached or not: expiry is a matter of time, not of a write. (Negated: an expiry that did
  // not parse counts as expired.)
  if (!(expiresAtMs > Date.now()))
    throw unauthenticated('The bearer token has expired. Refresh it or get a new one.');
  if (row.user_uuid !== null && row.role === null)
    throw unauthenticated('The user of this token no longer exists.');
  return { clientId: row.client_id, userUuid: row.user_uuid, role: row.role, tokenHash: row.token_hash };
}

/** Hash of a client secret; secrets are random or operator-chosen, never user passwords. */
export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(`client-secret:${secret}`).digest('hex');
}

/** The client whose id and secret match, or undefined (disabled clients included, for the caller to refuse). */
export async function verifyClient(db: Db, id: string, secret: string) {
  const client = await repo.findClientById(db, id);
  const expected = Buffer.from(client?.secret_hash ?? hashClientSecret('no-such-client'), 'hex');
  const actual = Buffer.from(hashClientSecret(secret), 'hex');
  const same = timingSafeEqual(expected, actual);
  return client && same ? client : undefined;
}

/** Issued token pair, in RFC 6749 form. */
export interface IssuedTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

/** Issues an access token (and for users a refresh token in the given family). */
export async function issueTokens(
  ctx: Pick<Context, 'config'>,
  db: Db,
  clientId: string,
  userUuid: string | null,
  familyId: string = uuidv7(),
): Promise<IssuedTokens> {
  const now = nowIso();
  const access = generateToken();
  await repo.insertToken(db, {
    token_hash: hashToken(access),
    kind: 'access',
    client_id: clientId,
    user_uuid: userUuid,
    family_id: familyId,
    expires_at: isoIn(ctx.config.ACCESS_TOKEN_TTL_SECONDS),
    used_at: null,
    revoked_at: null,
    created_at: now,
  });
  const out: IssuedTokens = {
    access_token: access,
    token_type: 'Bearer',
    expires_in: ctx.config.ACCESS_TOKEN_TTL_SECONDS,
    scope: userUuid ? 'user' : 'guest',
  };
  if (userUuid) {
    const refresh = generateToken();
    await repo.insertToken(db, {
      token_hash: hashToken(refresh),
      kind: 'refresh',
      client_id: clientId,
      user_uuid: userUuid,
      family_id: familyId,
      expires_at: isoIn(ctx.config.REFRESH_TOKEN_TTL_SECONDS),
      used_at: null,
      revoked_at: null,
      created_at: now,
    });
    out.refresh_token = refresh;
  }
  return out;
}

/** Creates or updates a client; returns its id. */
export async function saveClient(
  db: Kysely<Database>,
  client: { id: string; name: string; secret: string; firstParty: boolean },
): Promise<void> {
  const secretHash = hashClientSecret(client.secret);
  await db.transaction().execute(async (trx) => {
    const before = await repo.findClientById(trx, client.id);
    await repo.upsertClient(trx, {
      id: client.id,
      name: client.name,
      secret_hash: secretHash,
      first_party: client.firstParty ? 1 : 0,
      disabled: 0,
      created_at: nowIso(),
    });
    // A new secret (a rotation after a leak) or a client enabled again must not bring back what was issued before:
    // tokens minted with the old secret, or those a disable refused.
    if (before && (before.secret_hash !== secretHash || Number(before.disabled) === 1)) {
      await repo.revokeClientTokens(trx, client.id, nowIso());
    }
  });
}

/** Disables a client and revokes every token it issued, in one transaction; false when there is no such client. */
export async function disableClient(db: Kysely<Database>, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (!(await repo.setClientDisabled(trx, id, true))) return false;
    await repo.revokeClientTokens(trx, id, nowIso());
    return true;
  });
}

/** Revokes every token of a user (account deletion); call inside the deleting transaction. */
export async function revokeAllUserTokens(db: Db, userUuid: string): Promise<void> {
  await repo.revokeUserTokens(db, userUuid, nowIso());
}

/** Revokes every session of a user except the one the given access token belongs to (password change). */
export async function revokeOtherSessions(db: Db, userUuid: string, keepTokenHash: string): Promise<void> {
  const keep = await repo.findTokenByHash(db, keepTokenHash);
  if (!keep) return repo.revokeUserTokens(db, userUuid, nowIso());
  await repo.revokeUserTokensExceptFamily(db, userUuid, keep.family_id, nowIso());
}
