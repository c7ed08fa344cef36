import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { applyFilters, applyOrderAndWindow, type ListQuery } from '../../http/list-query.ts';
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

/** A user's messages, sent or received, under the list query's filters (paging aside). */
function messagesOf(db: Db, userUuid: string, lq: ListQuery) {
  return applyFilters(
    db
      .selectFrom('messages')
      .where((eb) =>
        eb.or([eb('messages.user_uuid', '=', userUuid), eb('messages.recipient_uuid', '=', userUuid)]),
      ),
    lq,
    'messages.uuid',
  );
}

/** One page of the messages a user sent or received, filtered and sorted (newest first by default), with the exact total. */
export async function listMessagesOfUser(db: Db, userUuid: string, lq: ListQuery) {
  const rows = await applyOrderAndWindow(messagesOf(db, userUuid, lq).selectAll(), lq, 'messages.uuid', [
    { column: 'messages.created_at', direction: 'desc' },
  ]).execute();
  const total = await messagesOf(db, userUuid, lq)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { rows, total: Number(total.n) };
}
