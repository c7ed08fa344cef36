import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { UserTable } from './user.table.ts';

/** Stores a new user row. */
export async function insertUser(db: Db, row: Insertable<UserTable>): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

/** A user row by uuid. */
export async function findUserByUuid(db: Db, uuid: string) {
  return db.selectFrom('users').selectAll().where('uuid', '=', uuid).executeTakeFirst();
}

/** A user row by username or email, compared case-insensitively through the stored keys. */
export async function findUserByLogin(db: Db, login: string) {
  const key = login.toLowerCase();
  return db
    .selectFrom('users')
    .selectAll()
    .where((eb) => eb.or([eb('username_key', '=', key), eb('email_key', '=', key)]))
    .executeTakeFirst();
}

/** Updates a user row; returns whether it existed. */
export async function updateUser(db: Db, uuid: string, patch: Updateable<UserTable>): Promise<boolean> {
  const r = await db.updateTable('users').set(patch).where('uuid', '=', uuid).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
