import { type Insertable, sql, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { DEFERRED, PREPARED } from '../../db/prepared-statements.ts';
import { queryTemplate } from '../../db/query-template.ts';
import { visibleTo } from '../connection/visibility.ts';
import type { PostTable } from './post.table.ts';

/** A new post row; without a language (null), it takes its author's. */
export type NewPostRow = Omit<Insertable<PostTable>, 'language'> & { language: string | null };

// The author's language is read by the insert itself: a statement less on a post's write path (a round trip on
// PostgreSQL, one of about ten).
const insertPostQuery = queryTemplate((db, row: NewPostRow) =>
  db
    .insertInto('posts')
    .values({
      ...row,
      language:
        row.language ??
        sql<string>`coalesce((select u.language from users u where u.uuid = ${row.user_uuid}), 'en')`,
    })
    .returning('language'),
);

// With its language given, nothing of the insert is read back: it may travel with the next statement of its
// transaction (DEFERRED; on PostgreSQL one round trip fewer a post). An author deleted meanwhile then fails that
// statement, or the commit, with the insert's foreign-key error.
const insertPostGivenLanguageQuery = queryTemplate((db, row: NewPostRow & { language: string }) =>
  db.insertInto('posts').values(row).modifyEnd(DEFERRED),
);

/** Stores a new post row and returns the language stored: as given, else the author's, else 'en'. */
export async function insertPost(db: Db, row: NewPostRow): Promise<string> {
  if (row.language !== null) {
    await insertPostGivenLanguageQuery(db, { ...row, language: row.language });
    return row.language;
  }
  const [stored] = (await insertPostQuery(db, row)).rows;
  if (stored === undefined) throw new Error('the insert of a post returned no row');
  return stored.language;
}

/** A post row by uuid, whoever may see it; `forUpdate` locks it until the transaction ends (PostgreSQL only). */
export async function findPostByUuid(db: Db, uuid: string, forUpdate = false) {
  return db
    .selectFrom('posts')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
}

/**
 * A post row by uuid if `viewer` (null for a guest) may see it; `lock` key-shares it until the transaction ends
 * (PostgreSQL only), so an edit of the post (which locks it for update) and the caller's write wait for each other.
 */
export async function findVisiblePost(db: Db, uuid: string, viewer: string | null, lock = false) {
  return db
    .selectFrom('posts')
    .modifyFront(PREPARED)
    .selectAll()
    .where('uuid', '=', uuid)
    .where(visibleTo(viewer, 'posts.user_uuid', 'posts.visibility'))
    .$if(lock, (q) => q.forKeyShare())
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

/** Posts a user wrote; `forUpdate` locks them until the transaction ends (PostgreSQL only). */
export async function findPostsOfUser(db: Db, userUuid: string, forUpdate = false) {
  return db
    .selectFrom('posts')
    .selectAll()
    .where('user_uuid', '=', userUuid)
    .orderBy('uuid')
    .$if(forUpdate, (q) => q.forUpdate())
    .execute();
}
