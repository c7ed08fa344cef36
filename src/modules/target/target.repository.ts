import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { visibleTo } from '../connection/visibility.ts';

/** Kinds of item that karma records and tag associations may point at. */
export const TARGET_TYPES = [
  'user',
  'network',
  'post',
  'comment',
  'media',
  'messages',
  'connection',
] as const;

/** One of the target kinds. */
export type TargetKind = (typeof TARGET_TYPES)[number];

/** What other modules need to know of an addressed item. */
export interface TargetRow {
  uuid: string;
  /** The item's author or owner (the requester for a connection, the sender for a message). */
  user_uuid: string;
  /** The item's language, where it has one. */
  language: string | null;
}

/**
 * Finds an item by kind and uuid. With `viewer` given (null for a guest), only an item the viewer may see is
 * returned: posts, comments (through their post) and media by the visibility rule, messages by sender and
 * recipient, connections by either side; users and networks are public. `lock` (PostgreSQL only) holds the item's
 * row (and a comment's post) key-shared until the transaction ends, so a delete that locks it first is waited for
 * and one that comes later waits for this write: a reaction or association never outlives its item unseen. A post's
 * edit locks it for update too (updatePost), so the edit and this write wait for each other: the association gets
 * the audience the edit leaves, and the visibility check runs again on the edited row. Key share, not share: a
 * network's deletion updating its posts (no key column) is not held up, which with the karma locks both take made a
 * deadlock.
 */
export async function findTarget(
  db: Db,
  kind: TargetKind,
  uuid: string,
  viewer?: string | null,
  lock = false,
): Promise<TargetRow | undefined> {
  const check = viewer !== undefined;
  switch (kind) {
    case 'post':
      return db
        .selectFrom('posts')
        .select(['uuid', 'user_uuid', 'language'])
        .where('uuid', '=', uuid)
        .$if(check, (q) => q.where(visibleTo(viewer ?? null, 'posts.user_uuid', 'posts.visibility')))
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
    case 'comment':
      return db
        .selectFrom('comments')
        .innerJoin('posts', 'posts.uuid', 'comments.post_uuid')
        .select(['comments.uuid', 'comments.user_uuid', 'comments.language'])
        .where('comments.uuid', '=', uuid)
        .$if(check, (q) => q.where(visibleTo(viewer ?? null, 'posts.user_uuid', 'posts.visibility')))
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
    case 'media':
      return db
        .selectFrom('media')
        .select(['uuid', 'user_uuid', 'language'])
        .where('uuid', '=', uuid)
        .$if(check, (q) => q.where(visibleTo(viewer ?? null, 'media.user_uuid', 'media.visibility')))
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
    case 'messages':
      return db
        .selectFrom('messages')
        .select(['uuid', 'user_uuid', 'language'])
        .where('uuid', '=', uuid)
        .$if(check, (q) =>
          q.where((eb) =>
            eb.or([eb('user_uuid', '=', viewer ?? ''), eb('recipient_uuid', '=', viewer ?? '')]),
          ),
        )
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
    case 'connection':
      return db
        .selectFrom('connections')
        .select(['uuid', 'user_uuid', sql<null>`null`.as('language')])
        .where('uuid', '=', uuid)
        .$if(check, (q) =>
          q.where((eb) =>
            eb.or([eb('user_uuid', '=', viewer ?? ''), eb('target_user_uuid', '=', viewer ?? '')]),
          ),
        )
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
    case 'network':
      return db
        .selectFrom('networks')
        .select(['uuid', 'user_uuid', sql<null>`null`.as('language')])
        .where('uuid', '=', uuid)
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
    case 'user':
      return db
        .selectFrom('users')
        .select(['uuid', 'uuid as user_uuid', 'language'])
        .where('uuid', '=', uuid)
        .$if(lock, (q) => q.forKeyShare())
        .executeTakeFirst();
  }
}
