import { type Expression, type SqlBool, sql } from 'kysely';

/**
 * The one visibility rule, as a query condition: a guest sees `public` items; a user also sees their own items
 * and the `friends` items of their confirmed friends. `ownerColumn` and `visibilityColumn` name the item's columns
 * (e.g. 'posts.user_uuid', 'posts.visibility'); a comment passes its post's columns.
 */
export function visibleTo(
  viewerUuid: string | null,
  ownerColumn: string,
  visibilityColumn: string,
): Expression<SqlBool> {
  const owner = sql.ref(ownerColumn);
  const visibility = sql.ref(visibilityColumn);
  if (viewerUuid === null) return sql<SqlBool>`${visibility} = 'public'`;
  return sql<SqlBool>`(${visibility} = 'public' or ${owner} = ${viewerUuid} or (${visibility} = 'friends' and exists (select 1 from friends f where f.user_uuid = ${viewerUuid} and f.friend_uuid = ${owner})))`;
}
