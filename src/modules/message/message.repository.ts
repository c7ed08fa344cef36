import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Window } from '../../http/paging.ts';
import type { MessageTable } from './message.table.ts';

/** Stores a new message row. */
export async function insertMessage(db: Db, row: Insertable<MessageTable>): Promise<void> {
  await db.insertInto('messages').values(row).execute();
}

/** A message row by uuid if `userUuid` sent or received it; `forUpdate` locks it until the transaction ends (PostgreSQL only). */
export async function findMessageOfParty(db: Db, uuid: string, userUuid: string, forUpdate = false) {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('uuid', '=', uuid)
    .where((eb) => eb.or([eb('user_uuid', '=', userUuid), eb('recipient_uuid', '=', userUuid)]))
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
}

/** Removes a message row. */
export async function deleteMessageRow(db: Db, uuid: string): Promise<void> {
  await db.deleteFrom('messages').where('uuid', '=', uuid).execute();
}

/** Every message a user sent or received, in uuid order; `forUpdate` locks them (PostgreSQL only). */
export async function findMessagesOfUser(db: Db, userUuid: string, forUpdate = false) {
  return db
    .selectFrom('messages')
    .selectAll()
    .where((eb) => eb.or([eb('user_uuid', '=', userUuid), eb('recipient_uuid', '=', userUuid)]))
    .orderBy('uuid')
    .$if(forUpdate, (q) => q.forUpdate())
    .execute();
}

/** One page of the messages a user sent or received, newest first, with the exact total. */
export async function listMessagesOfUser(db: Db, userUuid: string, window: Window) {
  const base = db
    .selectFrom('messages')
    .where((eb) => eb.or([eb('user_uuid', '=', userUuid), eb('recipient_uuid', '=', userUuid)]));
  const rows = await base
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .limit(window.limit)
    .offset(window.offset)
    .execute();
  const total = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(total.n) };
}
