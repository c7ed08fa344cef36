import type { Static } from 'typebox';
import { type Context, locksRows } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { ApiError, type ErrorDetail, objectNotFound } from '../../http/errors.ts';
import { revokeAllUserTokens, revokeOtherSessions } from '../auth/auth.service.ts';
import { hashPassword } from '../auth/password.ts';
import * as repo from './user.repository.ts';
import type { MeSchema, RegisterInput, UpdateInput, UserSchema } from './user.schemas.ts';
import type { UserTable } from './user.table.ts';

/** A user as the API shows it to anyone. */
export type PublicUser = Static<typeof UserSchema>;
/** The caller's own user. */
export type Me = Static<typeof MeSchema>;

/** Maps a users row to the public User object (never email, role or hash). */
export function toPublicUser(row: UserTable): PublicUser {
  return {
    uuid: row.uuid,
    type: 'user',
    network_uuid: row.network_uuid,
    username: row.username,
    display_name: row.display_name,
    bio: row.bio,
    language: row.language,
    karma: Number(row.karma),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Maps a users row to the caller's own view: the public fields plus email and role. */
export function toMe(row: UserTable): Me {
  return { ...toPublicUser(row), email: row.email, role: row.role === 'admin' ? 'admin' : 'user' };
}

/** The case-insensitive key of a username or email (what uniqueness and login compare). */
export function loginKey(value: string): string {
  return value.trim().toLowerCase();
}

function conflict(details: ErrorDetail[]): ApiError {
  return new ApiError(
    'conflict',
    `Already taken: ${details.map((d) => d.field).join(' and ')}. Choose another value.`,
    details,
  );
}

/** Registers a user; 409 conflict when the username or email is taken (ignoring case). */
export async function registerUser(ctx: Context, input: RegisterInput): Promise<PublicUser> {
  const usernameKey = loginKey(input.username);
  const emailKey = loginKey(input.email);
  const taken = async () => {
    const rows = await repo.findTakenKeys(ctx.db, usernameKey, emailKey);
    const details: ErrorDetail[] = [];
    if (rows.some((r) => r.username_key === usernameKey))
      details.push({ field: 'username', message: 'is already taken (usernames are compared ignoring case)' });
    if (rows.some((r) => r.email_key === emailKey))
      details.push({ field: 'email', message: 'is already registered' });
    return details;
  };
  const before = await taken();
  if (before.length > 0) throw conflict(before);
  // Hash outside the transaction: argon2 takes tens of milliseconds and must not hold a write lock.
  const passwordHash = await hashPassword(input.password);
  const now = nowIso();
  const row: UserTable = {
    uuid: uuidv7(),
    username: input.username,
    username_key: usernameKey,
    email: input.email,
    email_key: emailKey,
    password_hash: passwordHash,
    display_name: input.display_name ?? null,
    bio: input.bio ?? null,
    language: input.language ?? 'en',
    network_uuid: null,
    role: 'user',
    karma: 0,
    created_at: now,
    updated_at: now,
  };
  try {
    await ctx.db.transaction().execute(async (trx) => repo.insertUser(trx, row));
  } catch (err) {
    // Two registrations racing for one name: the unique index decides, the loser gets the same 409.
    if (isUniqueViolation(err)) {
      const details = await taken();
      throw conflict(details.length > 0 ? details : [{ field: 'username', message: 'is already taken' }]);
    }
    throw err;
  }
  return toPublicUser(row);
}

/** A user by uuid, as anyone may see it; 404 when missing. */
export async function getUser(ctx: Context, uuid: string): Promise<PublicUser> {
  const row = await repo.findUserByUuid(ctx.db, uuid);
  if (!row) throw objectNotFound('user');
  return toPublicUser(row);
}

/** The calling user with email and role. */
export async function getMe(ctx: Context, uuid: string): Promise<Me> {
  const row = await repo.findUserByUuid(ctx.db, uuid);
  // The token check already saw the user; it can only vanish in between.
  if (!row) throw objectNotFound('user');
  return toMe(row);
}

/** Owner of a user resource: the user itself (undefined when it does not exist). */
export async function userOwner(ctx: Context, uuid: string): Promise<string | undefined> {
  return repo.findUserUuid(ctx.db, uuid);
}

/**
 * Updates the caller's profile. A new password revokes every other session of the user (other devices must log in
 * again); the session that changed it keeps working.
 */
export async function updateUser(
  ctx: Context,
  uuid: string,
  input: UpdateInput,
  callerTokenHash: string,
): Promise<PublicUser> {
  const fields = Object.keys(input);
  if (fields.length === 0) {
    throw new ApiError(
      'invalid_request',
      'Nothing to update: send at least one of display_name, bio, language, password.',
      [{ field: '(root)', message: 'must have at least one of display_name, bio, language, password' }],
    );
  }
  const patch: Partial<UserTable> = { updated_at: nowIso() };
  if (input.display_name !== undefined) patch.display_name = input.display_name;
  if (input.bio !== undefined) patch.bio = input.bio;
  if (input.language !== undefined) patch.language = input.language;
  if (input.password !== undefined) patch.password_hash = await hashPassword(input.password);
  const row = await ctx.db.transaction().execute(async (trx) => {
    if (!(await repo.updateUser(trx, uuid, patch))) return undefined;
    if (input.language !== undefined) {
      const event = { name: 'userUpdated', actorUuid: uuid, targetUuid: uuid, targetType: 'user' } as const;
      await ctx.bus.emit(trx, { ...event, data: { language: input.language } });
    }
    if (input.password !== undefined) await revokeOtherSessions(trx, uuid, callerTokenHash);
    return repo.findUserByUuid(trx, uuid);
  });
  if (!row) throw objectNotFound('user');
  return toPublicUser(row);
}

/**
 * Deletes a user: `userDeleted` first (other modules remove the user's content in the same transaction), then every
 * token is revoked and the row removed.
 */
export async function deleteUser(ctx: Context, uuid: string): Promise<void> {
  const deleted = await ctx.db.transaction().execute(async (trx) => {
    // Locked (PostgreSQL): writes in flight on the user (a karma grant, a token refresh) finish first and their
    // results go with the account; later ones find no user.
    if (!(await repo.findUserUuid(trx, uuid, locksRows(ctx)))) return false;
    await ctx.bus.emit(trx, { name: 'userDeleted', actorUuid: uuid, targetUuid: uuid, targetType: 'user' });
    await revokeAllUserTokens(trx, uuid);
    return repo.deleteUser(trx, uuid);
  });
  if (!deleted) throw objectNotFound('user');
}

/** Sets a user's role (CLI); returns the user or undefined when no user has that username. */
export async function setUserRole(
  ctx: Context,
  username: string,
  role: 'user' | 'admin',
): Promise<Me | undefined> {
  return ctx.db.transaction().execute(async (trx) => {
    const row = await repo.findUserByUsername(trx, username);
    if (!row) return undefined;
    await repo.updateUser(trx, row.uuid, { role, updated_at: nowIso() });
    return toMe({ ...row, role });
  });
}

/** A user's row, read in the caller's transaction: how other modules read a user (existence, language, network). */
export async function findUserRow(db: Db, uuid: string): Promise<UserTable | undefined> {
  return repo.findUserByUuid(db, uuid);
}

/** Makes a user a member of a network (their updated_at moves), in the caller's transaction; the row as it now is. */
export async function setUserNetwork(
  db: Db,
  uuid: string,
  networkUuid: string,
): Promise<UserTable | undefined> {
  await repo.updateUser(db, uuid, { network_uuid: networkUuid, updated_at: nowIso() });
  return repo.findUserByUuid(db, uuid);
}
