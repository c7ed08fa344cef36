import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { NetworkTable } from './network.table.ts';

/** Stores a new network row. */
export async function insertNetwork(db: Db, row: Insertable<NetworkTable>): Promise<void> {
  await db.insertInto('networks').values(row).execute();
}

/** A network row by uuid, locked in `lock` mode until the transaction ends when given (PostgreSQL only). */
export async function findNetworkByUuid(db: Db, uuid: string, lock?: 'key share' | 'update') {
  return db
    .selectFrom('networks')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(lock === 'key share', (q) => q.forKeyShare())
    .$if(lock === 'update', (q) => q.forUpdate())
    .executeTakeFirst();
}

/** Applies `patch` to a network; the row as stored afterwards, or undefined when there is none. */
export async function updateNetworkRow(db: Db, uuid: string, patch: Updateable<NetworkTable>) {
  return db.updateTable('networks').set(patch).where('uuid', '=', uuid).returningAll().executeTakeFirst();
}

/** Detaches every member and post from a network, so nothing points at it once it is gone. */
export async function clearNetworkReferences(db: Db, uuid: string, now: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ network_uuid: null, updated_at: now })
    .where('network_uuid', '=', uuid)
    .execute();
  // Posts keep their updated_at (the author's last edit): moving it would re-index every post of the network for
  // search (the posts' triggers follow updated_at), all in this transaction.
  await db.updateTable('posts').set({ network_uuid: null }).where('network_uuid', '=', uuid).execute();
}

/** Removes a network row. */
export async function deleteNetworkRow(db: Db, uuid: string): Promise<void> {
  await db.deleteFrom('networks').where('uuid', '=', uuid).execute();
}

/** Networks a user created; `forUpdate` locks them until the transaction ends (PostgreSQL only). */
export async function findNetworksOfUser(db: Db, userUuid: string, forUpdate = false) {
  return db
    .selectFrom('networks')
    .selectAll()
    .where('user_uuid', '=', userUuid)
    .orderBy('uuid')
    .$if(forUpdate, (q) => q.forUpdate())
    .execute();
}
