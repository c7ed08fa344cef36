import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { visibleTo } from '../connection/visibility.ts';
import type { MediaTable } from './media.table.ts';

/** Stores a new media row. */
export async function insertMedia(db: Db, row: Insertable<MediaTable>): Promise<void> {
  await db.insertInto('media').values(row).execute();
}

/** A media row by uuid, whoever may see it; `forUpdate` locks it until the transaction ends (PostgreSQL only). */
export async function findMediaByUuid(db: Db, uuid: string, forUpdate = false) {
  return db
    .selectFrom('media')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
}

/** A media row by uuid if `viewer` (null for a guest) may see it. */
export async function findVisibleMedia(db: Db, uuid: string, viewer: string | null) {
  return db
    .selectFrom('media')
    .selectAll()
    .where('uuid', '=', uuid)
    .where(visibleTo(viewer, 'media.user_uuid', 'media.visibility'))
    .executeTakeFirst();
}

/** Removes a media row. */
export async function deleteMediaRow(db: Db, uuid: string): Promise<void> {
  await db.deleteFrom('media').where('uuid', '=', uuid).execute();
}

/** Media a user uploaded; `forUpdate` locks them until the transaction ends (PostgreSQL only). */
export async function findMediaOfUser(db: Db, userUuid: string, forUpdate = false) {
  return db
    .selectFrom('media')
    .selectAll()
    .where('user_uuid', '=', userUuid)
    .orderBy('uuid')
    .$if(forUpdate, (q) => q.forUpdate())
    .execute();
}

/** Which of these media uuids still have a row. */
export async function findExistingMediaUuids(db: Db, uuids: string[]): Promise<string[]> {
  if (uuids.length === 0) return [];
  const rows = await db.selectFrom('media').select('uuid').where('uuid', 'in', uuids).execute();
  return rows.map((r) => r.uuid);
}

/** Whether any media record exists. */
export async function hasAnyMedia(db: Db): Promise<boolean> {
  return (await db.selectFrom('media').select('uuid').limit(1).execute()).length > 0;
}

/** Which of `keys` are the storage keys of media records. */
export async function findExistingStorageKeys(db: Db, keys: string[]): Promise<string[]> {
  if (keys.length === 0) return [];
  const rows = await db.selectFrom('media').select('storage_key').where('storage_key', 'in', keys).execute();
  return rows.map((r) => r.storage_key);
}

/** The bytes of every media file a user has stored. */
export async function sumMediaSizeOfUser(db: Db, userUuid: string): Promise<number> {
  const row = await db
    .selectFrom('media')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('size'), eb.lit(0)).as('bytes'))
    .where('user_uuid', '=', userUuid)
    .executeTakeFirstOrThrow();
  return Number(row.bytes);
}
