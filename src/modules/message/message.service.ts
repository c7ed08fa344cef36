import type { Selectable } from 'kysely';
import { type Context, locksRows } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import type { Count } from '../../http/envelope.ts';
import { invalidField, objectNotFound } from '../../http/errors.ts';
import { parseListQuery } from '../../http/list-query.ts';
import { LIST_MAX_OFFSET } from '../../http/paging.ts';
import { findUserRow } from '../user/user.service.ts';
import * as repo from './message.repository.ts';
import { type CreateMessageInput, MESSAGE_WHITELIST, type Message } from './message.schemas.ts';
import type { MessageTable } from './message.table.ts';

/** Maps a message row to the API object. */
export function toMessage(row: Selectable<MessageTable>): Message {
  return {
    uuid: row.uuid,
    type: 'messages',
    user_uuid: row.user_uuid,
    recipient_uuid: row.recipient_uuid,
    body: row.body,
    language: row.language,
    created_at: row.created_at,
  };
}

/** Sends a message from the caller to another existing user; emits messageCreated. */
export async function sendMessage(
  ctx: Context,
  senderUuid: string,
  input: CreateMessageInput,
): Promise<Message> {
  if (input.recipient_uuid === senderUuid) {
    throw invalidField('recipient_uuid', 'is your own uuid; send the message to another user');
  }
  return ctx.db.transaction().execute(async (trx) => {
    if (!(await findUserRow(trx, input.recipient_uuid))) throw objectNotFound('user');
    const sender = await findUserRow(trx, senderUuid);
    const row = {
      uuid: uuidv7(),
      user_uuid: senderUuid,
      recipient_uuid: input.recipient_uuid,
      body: input.body,
      language: input.language ?? sender?.language ?? 'en',
      created_at: nowIso(),
    };
    await repo.insertMessage(trx, row);
    await ctx.bus.emit(trx, {
      name: 'messageCreated',
      actorUuid: senderUuid,
      targetUuid: row.uuid,
      targetType: 'messages',
      data: { recipient_uuid: row.recipient_uuid },
    });
    return toMessage(row);
  });
}

/** A message the caller sent or received, or 404. */
export async function getMessage(ctx: Context, userUuid: string, uuid: string): Promise<Message> {
  const row = await repo.findMessageOfParty(ctx.db, uuid, userUuid);
  if (!row) throw objectNotFound('message');
  return toMessage(row);
}

/** Deletes a message; only its sender may (the recipient and anyone else get 404); emits messageDeleted first. */
export async function deleteMessage(ctx: Context, userUuid: string, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    // Locked (PostgreSQL), as a post's delete locks the post: an association committing meanwhile goes too.
    const row = await repo.findMessageOfParty(trx, uuid, userUuid, locksRows(ctx));
    if (!row || row.user_uuid !== userUuid) throw objectNotFound('message');
    await deleteMessageInTrx(ctx, trx, row);
  });
}

/** Emits messageDeleted (its sender the actor), then removes the row, inside the caller's transaction. */
async function deleteMessageInTrx(ctx: Context, trx: Db, row: Selectable<MessageTable>): Promise<void> {
  await ctx.bus.emit(trx, {
    name: 'messageDeleted',
    actorUuid: row.user_uuid,
    targetUuid: row.uuid,
    targetType: 'messages',
    data: { recipient_uuid: row.recipient_uuid },
  });
  await repo.deleteMessageRow(trx, row.uuid);
}

/** One page of the messages the caller sent or received (newest first unless sorted), with the exact total. */
export async function listMessages(
  ctx: Context,
  userUuid: string,
  query: Record<string, unknown>,
): Promise<{ data: Message[]; count: Count }> {
  const lq = parseListQuery(query, MESSAGE_WHITELIST, LIST_MAX_OFFSET);
  const { rows, total } = await repo.listMessagesOfUser(ctx.readDb, userUuid, lq);
  return { data: rows.map(toMessage), count: { offset: lq.offset, limit: lq.limit, total } };
}

/**
 * Subscribes the message module: a deleted user's sent and received messages go with them, each with its own
 * messageDeleted, so what others attached to them (tag associations, and their tags' counts) goes too.
 */
export function subscribeMessages(ctx: Context): void {
  ctx.bus.on(['userDeleted'], async (trx, event) => {
    for (const row of await repo.findMessagesOfUser(trx, event.targetUuid, locksRows(ctx)))
      await deleteMessageInTrx(ctx, trx, row);
  });
}
