import type { Selectable } from 'kysely';
import { type Context, locksRows } from '../../context.ts';
import type { Db, Dialect } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import type { Count } from '../../http/envelope.ts';
import { ApiError, invalidField, objectNotFound } from '../../http/errors.ts';
import { parseListQuery } from '../../http/list-query.ts';
import { LIST_MAX_OFFSET } from '../../http/paging.ts';
import { findUserRow } from '../user/user.service.ts';
import * as repo from './connection.repository.ts';
import { CONNECTION_WHITELIST, type Connection } from './connection.schemas.ts';
import type { ConnectionTable } from './connection.table.ts';

/** Maps a connection row to the API object. */
export function toConnection(row: Omit<Selectable<ConnectionTable>, 'pair_key'>): Connection {
  return {
    uuid: row.uuid,
    type: 'connection',
    user_uuid: row.user_uuid,
    target_user_uuid: row.target_user_uuid,
    status: row.status === 'confirmed' ? 'confirmed' : 'pending',
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Sends a friend request from `userUuid` to `targetUuid`; one connection per pair, in either direction. */
export async function requestConnection(
  ctx: Context,
  userUuid: string,
  targetUuid: string,
): Promise<Connection> {
  if (targetUuid === userUuid) {
    throw invalidField('user_uuid', 'is your own uuid; a friend request goes to another user');
  }
  const conflict = () =>
    new ApiError(
      'conflict',
      'A connection between you and this user already exists; confirm it (if you are its addressee) or delete it first.',
    );
  try {
    return await ctx.db.transaction().execute(async (trx) => {
      if (!(await findUserRow(trx, targetUuid))) throw objectNotFound('user');
      if (await repo.findConnectionByPair(trx, userUuid, targetUuid)) throw conflict();
      const now = nowIso();
      const row = {
        uuid: uuidv7(),
        user_uuid: userUuid,
        target_user_uuid: targetUuid,
        pair_key: repo.pairKey(userUuid, targetUuid),
        status: 'pending',
        created_at: now,
        updated_at: now,
      };
      await repo.insertConnection(trx, row);
      return toConnection(row);
    });
  } catch (err) {
    // Two requests racing for the same pair: the unique pair_key lets only one in.
    if (isUniqueViolation(err)) throw conflict();
    throw err;
  }
}

/** Confirms a pending request; only its addressee may, anyone else gets 404. Confirming twice changes nothing. */
export async function confirmConnection(ctx: Context, userUuid: string, uuid: string): Promise<Connection> {
  return ctx.db.transaction().execute(async (trx) => {
    // Locked (PostgreSQL): a second confirm at once waits and reads the first one's outcome; both read it pending
    // before, and the second's friend rows broke the primary key (a 500).
    const row = await repo.findConnectionByUuid(trx, uuid, locksRows(ctx));
    if (!row || row.target_user_uuid !== userUuid) throw objectNotFound('connection');
    if (row.status === 'confirmed') return toConnection(row);
    const now = nowIso();
    await repo.updateConnectionStatus(trx, uuid, 'confirmed', now);
    await repo.insertFriendPair(trx, row.user_uuid, row.target_user_uuid);
    await ctx.bus.emit(trx, {
      name: 'connectionConfirmed',
      actorUuid: userUuid,
      targetUuid: uuid,
      targetType: 'connection',
      data: { user_uuid: row.user_uuid, target_user_uuid: row.target_user_uuid },
    });
    return toConnection({ ...row, status: 'confirmed', updated_at: now });
  });
}

/** Deletes a connection row inside `trx`: friends rows go, and connectionDeleted is emitted if it was confirmed. */
export async function deleteConnectionInTrx(
  ctx: Context,
  trx: Db,
  row: Selectable<ConnectionTable>,
  actorUuid: string,
): Promise<void> {
  if (row.status === 'confirmed') {
    await repo.deleteFriendPair(trx, row.user_uuid, row.target_user_uuid);
    await ctx.bus.emit(trx, {
      name: 'connectionDeleted',
      actorUuid,
      targetUuid: row.uuid,
      targetType: 'connection',
      data: { user_uuid: row.user_uuid, target_user_uuid: row.target_user_uuid },
    });
  }
  await repo.deleteConnectionRow(trx, row.uuid);
}

/** Deletes a connection (pending or confirmed); either side may, anyone else gets 404. */
export async function deleteConnection(ctx: Context, userUuid: string, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await repo.findConnectionByUuid(trx, uuid, locksRows(ctx));
    if (!row || (row.user_uuid !== userUuid && row.target_user_uuid !== userUuid)) {
      throw objectNotFound('connection');
    }
    await deleteConnectionInTrx(ctx, trx, row, userUuid);
  });
}

/** Removes every connection of a deleted user, inside the userDeleted transaction. */
export async function deleteConnectionsOfUser(ctx: Context, trx: Db, userUuid: string): Promise<void> {
  // Locked as read: a confirm committing meanwhile is waited for, and its friendship and karma are undone here.
  for (const row of await repo.findConnectionsOfUser(trx, userUuid, locksRows(ctx))) {
    await deleteConnectionInTrx(ctx, trx, row, userUuid);
  }
}

/** One page of the caller's connections (as requester or addressee), with the exact total. */
export async function listConnections(
  ctx: Context,
  userUuid: string,
  query: Record<string, unknown>,
): Promise<{ data: Connection[]; count: Count }> {
  const lq = parseListQuery(query, CONNECTION_WHITELIST, LIST_MAX_OFFSET);
  const { rows, total } = await repo.listConnectionsOfUser(ctx.readDb, userUuid, lq);
  return { data: rows.map(toConnection), count: { offset: lq.offset, limit: lq.limit, total } };
}

/** Pairs on which the friends table and the confirmed connections disagree, at most `limit` (the `check` command). */
export async function checkFriendships(db: Db, limit: number): Promise<repo.FriendshipMismatch[]> {
  return repo.findFriendshipMismatches(db, limit);
}

/** Of `owners`, the confirmed friends of `viewer` (whose friends-only items the viewer may see). */
export async function friendsAmong(
  db: Db,
  dialect: Dialect,
  viewer: string,
  owners: string[],
): Promise<Set<string>> {
  return repo.findFriendsAmong(db, dialect, viewer, owners);
}

/** Subscribes the connection module to the events it reacts to. */
export function subscribeConnections(ctx: Context): void {
  ctx.bus.on(['userDeleted'], async (trx, event) => deleteConnectionsOfUser(ctx, trx, event.targetUuid));
}
