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

/** Which of a username key and an email key are already taken (by anyone). */
export async function findTakenKeys(db: Db, usernameKey: string, emailKey: string) {
  return db
    .selectFrom('users')
    .select(['username_key', 'email_key'])
    .where((eb) => eb.or([eb('username_key', '=', usernameKey), eb('email_key', '=', emailKey)]))
    .execute();
}

/** The uuid of a user, if it exists (owner checks); `forUpdate` locks it until the transaction ends (PostgreSQL only). */
export async function findUserUuid(db: Db, uuid: string, forUpdate = false): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .select('uuid')
    .where('uuid', '=', uuid)
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
  return row?.uuid;
}

/** A user row by username, compared case-insensitively. */
export async function findUserByUsername(db: Db, username: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('username_key', '=', username.toLowerCase())
    .executeTakeFirst();
}

/** Deletes a user row (rows that reference it cascade); returns whether it existed. */
export async function deleteUser(db: Db, uuid: string): Promise<boolean> {
  const r = await db.deleteFrom('users').where('uuid', '=', uuid).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}
