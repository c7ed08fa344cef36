import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { DEFERRED } from '../../db/prepared-statements.ts';
import { visibleTo } from '../connection/visibility.ts';
import type { CommentTable } from './comment.table.ts';

/** Stores a new comment row; nothing is read back, so it may travel with the next statement (DEFERRED). */
export async function insertComment(db: Db, row: Insertable<CommentTable>): Promise<void> {
  await db.insertInto('comments').values(row).modifyEnd(DEFERRED).execute();
}

/** A comment row by uuid, whoever may see it; `forUpdate` locks it until the transaction ends (PostgreSQL only). */
export async function findCommentByUuid(db: Db, uuid: string, forUpdate = false) {
  return db
    .selectFrom('comments')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
}

/** A comment row by uuid if `viewer` (null for a guest) may see its post. */
export async function findVisibleComment(db: Db, uuid: string, viewer: string | null) {
  return db
    .selectFrom('comments')
    .innerJoin('posts', 'posts.uuid', 'comments.post_uuid')
    .selectAll('comments')
    .where('comments.uuid', '=', uuid)
    .where(visibleTo(viewer, 'posts.user_uuid', 'posts.visibility'))
    .executeTakeFirst();
}

/** Changes a comment row. */
export async function updateCommentRow(db: Db, uuid: string, patch: Updateable<CommentTable>): Promise<void> {
  await db.updateTable('comments').set(patch).where('uuid', '=', uuid).execute();
}

/** Removes a comment row. */
export async function deleteCommentRow(db: Db, uuid: string): Promise<void> {
  await db.deleteFrom('comments').where('uuid', '=', uuid).execute();
}

// Comments by one column, in uuid order (the order locks are taken in); `forUpdate` as below.
function findCommentsBy(db: Db, column: 'post_uuid' | 'user_uuid', value: string, forUpdate: boolean) {
  return db
    .selectFrom('comments')
    .selectAll()
    .where(column, '=', value)
    .orderBy('uuid')
    .$if(forUpdate, (q) => q.forUpdate())
    .execute();
}

/** Comments under a post; `forUpdate` locks them until the transaction ends (PostgreSQL only). */
export async function findCommentsOfPost(db: Db, postUuid: string, forUpdate = false) {
  return findCommentsBy(db, 'post_uuid', postUuid, forUpdate);
}

/** Comments a user wrote; `forUpdate` locks them until the transaction ends (PostgreSQL only). */
export async function findCommentsOfUser(db: Db, userUuid: string, forUpdate = false) {
  return findCommentsBy(db, 'user_uuid', userUuid, forUpdate);
}
