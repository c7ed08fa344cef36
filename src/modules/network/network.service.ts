import type { Selectable } from 'kysely';
import { type Context, locksRows } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { objectNotFound } from '../../http/errors.ts';
import { findUserRow, type PublicUser, setUserNetwork, toPublicUser } from '../user/user.service.ts';
import * as repo from './network.repository.ts';
import type { CreateNetworkInput, Network, UpdateNetworkInput } from './network.schemas.ts';
import type { NetworkTable } from './network.table.ts';

/** Maps a network row to the API object. */
export function toNetwork(row: Selectable<NetworkTable>): Network {
  return {
    uuid: row.uuid,
    type: 'network',
    name: row.name,
    description: row.description,
    payment_id: row.payment_id === null ? null : Number(row.payment_id),
    user_uuid: row.user_uuid,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Creates a network owned by the caller; emits networkCreated. */
export async function createNetwork(
  ctx: Context,
  userUuid: string,
  input: CreateNetworkInput,
): Promise<Network> {
  return ctx.db.transaction().execute(async (trx) => {
    const now = nowIso();
    const row = {
      uuid: uuidv7(),
      name: input.name,
      description: input.description ?? null,
      payment_id: input.payment_id ?? null,
      user_uuid: userUuid,
      created_at: now,
      updated_at: now,
    };
    await repo.insertNetwork(trx, row);
    await ctx.bus.emit(trx, {
      name: 'networkCreated',
      actorUuid: userUuid,
      targetUuid: row.uuid,
      targetType: 'network',
    });
    return toNetwork(row);
  });
}

/** A network by uuid (networks are public), or 404. */
export async function getNetwork(ctx: Context, uuid: string): Promise<Network> {
  const row = await repo.findNetworkByUuid(ctx.db, uuid);
  if (!row) throw objectNotFound('network');
  return toNetwork(row);
}

/** The owner of a network, or undefined when it does not exist (for the owner check). */
export async function networkOwner(ctx: Context, uuid: string): Promise<string | undefined> {
  return (await repo.findNetworkByUuid(ctx.db, uuid))?.user_uuid;
}

/** Changes a network's name or description (the owner check ran before). */
export async function updateNetwork(ctx: Context, uuid: string, input: UpdateNetworkInput): Promise<Network> {
  const patch = {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    updated_at: nowIso(),
  };
  // One statement: the answer is the row as this update left it (a concurrent edit of the other field included),
  // and a network deleted meanwhile leaves no row, so the answer is the 404 of a missing network.
  const row = await ctx.db.transaction().execute((trx) => repo.updateNetworkRow(trx, uuid, patch));
  if (!row) throw objectNotFound('network');
  return toNetwork(row);
}

/** Deletes a network inside `trx`: networkDeleted first (subscribers still see the row), then members are cleared. */
export async function deleteNetworkInTrx(
  ctx: Context,
  trx: Db,
  row: Selectable<NetworkTable>,
  actorUuid: string,
): Promise<void> {
  await ctx.bus.emit(trx, { name: 'networkDeleted', actorUuid, targetUuid: row.uuid, targetType: 'network' });
  await repo.clearNetworkReferences(trx, row.uuid, nowIso());
  await repo.deleteNetworkRow(trx, row.uuid);
}

/**
 * The row lock a transaction takes on the network it decides on, on PostgreSQL (SQLite runs one write transaction at
 * a time): a delete locks it for update and a join key-shares it (a rename is not held up), so a join committing
 * during a delete is waited for and its member cleared, and a join after a delete finds no network. Before, the
 * delete cleared the members it saw and joins that committed meanwhile kept a network that no longer exists.
 */
function networkLock(ctx: Context, mode: 'key share' | 'update'): 'key share' | 'update' | undefined {
  return locksRows(ctx) ? mode : undefined;
}

/** Deletes a network (the owner check ran before); its members are left without a network. */
export async function deleteNetwork(ctx: Context, actorUuid: string, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await repo.findNetworkByUuid(trx, uuid, networkLock(ctx, 'update'));
    if (!row) throw objectNotFound('network');
    await deleteNetworkInTrx(ctx, trx, row, actorUuid);
  });
}

/** Makes the caller a member of the network (a user belongs to one network); returns the updated user. */
export async function joinNetwork(ctx: Context, userUuid: string, uuid: string): Promise<PublicUser> {
  return ctx.db.transaction().execute(async (trx) => {
    if (!(await repo.findNetworkByUuid(trx, uuid, networkLock(ctx, 'key share'))))
      throw objectNotFound('network');
    const current = await findUserRow(trx, userUuid);
    if (!current) throw objectNotFound('user');
    // Joining the network one is in changes nothing, updated_at included.
    if (current.network_uuid === uuid) return toPublicUser(current);
    const user = await setUserNetwork(trx, userUuid, uuid);
    if (!user) throw objectNotFound('user');
    return toPublicUser(user);
  });
}

/** Subscribes the network module: a deleted user's networks go with them, members cleared. */
export function subscribeNetworks(ctx: Context): void {
  ctx.bus.on(['userDeleted'], async (trx, event) => {
    for (const row of await repo.findNetworksOfUser(trx, event.targetUuid, locksRows(ctx))) {
      await deleteNetworkInTrx(ctx, trx, row, event.targetUuid);
    }
  });
}
