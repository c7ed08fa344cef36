import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { visibleTo } from '../connection/visibility.ts';
import type { PostTable } from './post.table.ts';

/** Stores a new post row. */
export async function insertPost(db: Db, row: Insertable<PostTable>): Promise<void> {
  await db.insertInto('posts').values(row).execute();
}

/** A post row by uuid, whoever may see it. */
export async function findPostByUuid(db: Db, uuid: string) {
  return db.selectFrom('posts').selectAll().where('uuid', '=', uuid).executeTakeFirst();
}

/** A post row by uuid if `viewer` (null for a guest) may see it. */
export async function findVisiblePost(db: Db, uuid: string, viewer: string | null) {
  return db
    .selectFrom('posts')
    .modifyFront(PREPARED)
    .selectAll()
    .where('uuid', '=', uuid)
    .where(visibleTo(viewer, 'posts.user_uuid', 'posts.visibility'))
    .executeTakeFirst();
}

/** Changes a post row. */
export async function updatePostRow(db: Db, uuid: string, patch: Updateable<PostTable>): Promise<void> {
  await db.updateTable('posts').set(patch).where('uuid', '=', uuid).execute();
}

/** Removes a post row. */
export async function deletePostRow(db: Db, uuid: string): Promise<void> {
  await db.deleteFrom('posts').where('uuid', '=', uuid).execute();
}

/** Posts a user wrote. */
export async function findPostsOfUser(db: Db, userUuid: string) {
  return db.selectFrom('posts').selectAll().where('user_uuid', '=', userUuid).orderBy('uuid').execute();
}
