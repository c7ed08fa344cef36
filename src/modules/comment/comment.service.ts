import type { Selectable } from 'kysely';
import { type Context, locksRows } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { objectNotFound } from '../../http/errors.ts';
import { findVisiblePost } from '../post/post.repository.ts';
import { findUserRow } from '../user/user.service.ts';
import * as repo from './comment.repository.ts';
import type { Comment, CreateCommentInput, UpdateCommentInput } from './comment.schemas.ts';
import type { CommentTable } from './comment.table.ts';

/** Maps a comment row to the API object. */
export function toComment(row: Selectable<CommentTable>): Comment {
  return {
    uuid: row.uuid,
    type: 'comment',
    post_uuid: row.post_uuid,
    user_uuid: row.user_uuid,
    body: row.body,
    language: row.language,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Adds a comment to a post the caller may see (else 404); the language defaults to the author's. */
export async function createComment(
  ctx: Context,
  userUuid: string,
  postUuid: string,
  input: CreateCommentInput,
): Promise<Comment> {
  return ctx.db.transaction().execute(async (trx) => {
    // Key-shared (PostgreSQL), where an edit of the post locks it for update: an edit committing meanwhile is waited
    // for and the visibility checked again, and one that comes later waits for this comment, so its search document
    // and tags carry the post's audience.
    if (!(await findVisiblePost(trx, postUuid, userUuid, locksRows(ctx)))) throw objectNotFound('post');
    const author = await findUserRow(trx, userUuid);
    const now = nowIso();
    const row = {
      uuid: uuidv7(),
      post_uuid: postUuid,
      user_uuid: userUuid,
      body: input.body,
      language: input.language ?? author?.language ?? 'en',
      created_at: now,
      updated_at: now,
    };
    await repo.insertComment(trx, row);
    await ctx.bus.emit(trx, {
      name: 'commentCreated',
      actorUuid: userUuid,
      targetUuid: row.uuid,
      targetType: 'comment',
      data: { post_uuid: postUuid },
    });
    return toComment(row);
  });
}

/** A comment the viewer may see (through its post), or 404 exactly as for a missing one. */
export async function getComment(ctx: Context, uuid: string, viewer: string | null): Promise<Comment> {
  const row = await repo.findVisibleComment(ctx.db, uuid, viewer);
  if (!row) throw objectNotFound('comment');
  return toComment(row);
}

/**
 * The author of a comment the caller may see (through its post), for the owner check; undefined when it does not
 * exist or its post is hidden from the caller, who then gets the 404 of a missing comment, as when reading it.
 */
export async function commentOwner(
  ctx: Context,
  uuid: string,
  viewer: string | null,
): Promise<string | undefined> {
  return (await repo.findVisibleComment(ctx.db, uuid, viewer))?.user_uuid;
}

/**
 * The comment its author changes or deletes, locked (PostgreSQL), while they may still see its post; else 404. The
 * owner check ran before the transaction, unlocked: the post is key-shared first, as a new comment does, so an edit
 * of its visibility committing meanwhile is waited for and checked again, and a later one waits for this write (the
 * hashtags an edit adds carry the post's audience). Post before comment, the order a post's deletion locks them in.
 */
async function lockOwnComment(ctx: Context, trx: Db, uuid: string): Promise<Selectable<CommentTable>> {
  const found = await repo.findCommentByUuid(trx, uuid);
  if (!found) throw objectNotFound('comment');
  if (!(await findVisiblePost(trx, found.post_uuid, found.user_uuid, locksRows(ctx)))) {
    throw objectNotFound('comment');
  }
  // Locked: a delete committing meanwhile leaves nothing to write (404, not the old row as if kept).
  const row = await repo.findCommentByUuid(trx, uuid, locksRows(ctx));
  if (!row) throw objectNotFound('comment');
  return row;
}

/** Changes a comment's body (the owner check ran before); emits commentUpdated. */
export async function updateComment(ctx: Context, uuid: string, input: UpdateCommentInput): Promise<Comment> {
  return ctx.db.transaction().execute(async (trx) => {
    const row = await lockOwnComment(ctx, trx, uuid);
    const patch = { body: input.body, updated_at: nowIso() };
    await repo.updateCommentRow(trx, uuid, patch);
    await ctx.bus.emit(trx, {
      name: 'commentUpdated',
      actorUuid: row.user_uuid,
      targetUuid: uuid,
      targetType: 'comment',
      data: { post_uuid: row.post_uuid },
    });
    return toComment({ ...row, ...patch });
  });
}

/** Deletes a comment inside `trx`: commentDeleted (actor: its author) first, then the row. */
export async function deleteCommentInTrx(
  ctx: Context,
  trx: Db,
  row: Selectable<CommentTable>,
): Promise<void> {
  await ctx.bus.emit(trx, {
    name: 'commentDeleted',
    actorUuid: row.user_uuid,
    targetUuid: row.uuid,
    targetType: 'comment',
    data: { post_uuid: row.post_uuid },
  });
  await repo.deleteCommentRow(trx, row.uuid);
}

/** Deletes every comment under a post, each with its event (the post is about to go). */
export async function deleteCommentsOfPost(ctx: Context, trx: Db, postUuid: string): Promise<void> {
  // Locked (PostgreSQL): an edit re-syncing a comment's hashtags meanwhile is waited for, and its tags go too.
  for (const row of await repo.findCommentsOfPost(trx, postUuid, locksRows(ctx)))
    await deleteCommentInTrx(ctx, trx, row);
}

/** Deletes a comment (the owner check ran before), while its author may still see its post. */
export async function deleteComment(ctx: Context, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    // Locked (PostgreSQL), as a post's delete locks the post: a reaction committing meanwhile goes with its karma.
    const row = await lockOwnComment(ctx, trx, uuid);
    await deleteCommentInTrx(ctx, trx, row);
  });
}

/** Subscribes the comment module: a deleted user's comments go with them. */
export function subscribeComments(ctx: Context): void {
  ctx.bus.on(['userDeleted'], async (trx, event) => {
    for (const row of await repo.findCommentsOfUser(trx, event.targetUuid, locksRows(ctx)))
      await deleteCommentInTrx(ctx, trx, row);
  });
}
