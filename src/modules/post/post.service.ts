import type { Selectable } from 'kysely';
import { type Context, locksRows } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { objectNotFound } from '../../http/errors.ts';
import { deleteCommentsOfPost } from '../comment/comment.service.ts';
import { findNetworkByUuid } from '../network/network.repository.ts';
import * as repo from './post.repository.ts';
import type { CreatePostInput, Post, UpdatePostInput } from './post.schemas.ts';
import type { PostTable } from './post.table.ts';

/** Maps a post row to the API object. */
export function toPost(row: Selectable<PostTable>): Post {
  return {
    uuid: row.uuid,
    type: 'post',
    user_uuid: row.user_uuid,
    body: row.body,
    visibility: row.visibility as Post['visibility'],
    language: row.language,
    network_uuid: row.network_uuid,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Creates a post by the caller; the language defaults to the author's; emits postCreated. */
export async function createPost(ctx: Context, userUuid: string, input: CreatePostInput): Promise<Post> {
  return ctx.db.transaction().execute(async (trx) => {
    if (input.network_uuid !== undefined && !(await findNetworkByUuid(trx, input.network_uuid))) {
      throw objectNotFound('network');
    }
    const now = nowIso();
    const fields = {
      uuid: uuidv7(),
      user_uuid: userUuid,
      body: input.body,
      visibility: input.visibility ?? 'public',
      network_uuid: input.network_uuid ?? null,
      created_at: now,
      updated_at: now,
    };
    // Without a language the post takes its author's; an author deleted meanwhile fails the insert's foreign key (409).
    const row = {
      ...fields,
      language: await repo.insertPost(trx, { ...fields, language: input.language ?? null }),
    };
    // The text rides along, so the tag subscriber need not read the row just written back.
    await ctx.bus.emit(trx, {
      name: 'postCreated',
      actorUuid: userUuid,
      targetUuid: row.uuid,
      targetType: 'post',
      data: { body: row.body, language: row.language, visibility: row.visibility },
    });
    return toPost(row);
  });
}

/** A post the viewer may see, or 404 exactly as for a missing one. */
export async function getPost(ctx: Context, uuid: string, viewer: string | null): Promise<Post> {
  const row = await repo.findVisiblePost(ctx.db, uuid, viewer);
  if (!row) throw objectNotFound('post');
  return toPost(row);
}

/** The author of a post, or undefined when it does not exist (for the owner check). */
export async function postOwner(ctx: Context, uuid: string): Promise<string | undefined> {
  return (await repo.findPostByUuid(ctx.db, uuid))?.user_uuid;
}

/** Changes a post's body, visibility or language (the owner check ran before); emits postUpdated. */
export async function updatePost(ctx: Context, uuid: string, input: UpdatePostInput): Promise<Post> {
  return ctx.db.transaction().execute(async (trx) => {
    // Locked for update (PostgreSQL): comments and reactions key-share the post, so the triggers that copy its
    // visibility and language onto them run after those commit or before they start; and a delete committing
    // meanwhile leaves nothing to update (404).
    const row = await repo.findPostByUuid(trx, uuid, locksRows(ctx));
    if (!row) throw objectNotFound('post');
    const patch = {
      ...(input.body !== undefined ? { body: input.body } : {}),
      ...(input.visibility !== undefined ? { visibility: input.visibility } : {}),
      ...(input.language !== undefined ? { language: input.language } : {}),
      updated_at: nowIso(),
    };
    await repo.updatePostRow(trx, uuid, patch);
    await ctx.bus.emit(trx, {
      name: 'postUpdated',
      actorUuid: row.user_uuid,
      targetUuid: uuid,
      targetType: 'post',
    });
    return toPost({ ...row, ...patch });
  });
}

/** Deletes a post inside `trx`: its comments first (each with commentDeleted), then postDeleted, then the row. */
export async function deletePostInTrx(ctx: Context, trx: Db, row: Selectable<PostTable>): Promise<void> {
  await deleteCommentsOfPost(ctx, trx, row.uuid);
  await ctx.bus.emit(trx, {
    name: 'postDeleted',
    actorUuid: row.user_uuid,
    targetUuid: row.uuid,
    targetType: 'post',
  });
  await repo.deletePostRow(trx, row.uuid);
}

/** Deletes a post and its comments (the owner check ran before). */
export async function deletePost(ctx: Context, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    // Locked (PostgreSQL): a comment or reaction committing meanwhile is waited for and removed with its karma, and
    // one sent after finds no post; read unlocked, they were cascaded away without their events.
    const row = await repo.findPostByUuid(trx, uuid, locksRows(ctx));
    if (!row) throw objectNotFound('post');
    await deletePostInTrx(ctx, trx, row);
  });
}

/** Subscribes the post module: a deleted user's posts go with them, comments included. */
export function subscribePosts(ctx: Context): void {
  ctx.bus.on(['userDeleted'], async (trx, event) => {
    // Locked (PostgreSQL), as a single post's delete locks it: comments and reactions committing meanwhile go too.
    for (const row of await repo.findPostsOfUser(trx, event.targetUuid, locksRows(ctx)))
      await deletePostInTrx(ctx, trx, row);
  });
}
