import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';

/**
 * Ends an EXISTS subquery that PostgreSQL should plan as a probe per outer row. It does not rewrite an EXISTS whose
 * subquery has an OFFSET into a hashed subplan, so it neither builds one nor plans the subquery a second time for
 * it. SQLite probes either way.
 */
export const PLAN_AS_PROBE = sql` limit 1 offset 0`;

/**
 * Whether `owner` is a confirmed friend of `viewerUuid` (a uuid, or a column holding one per row: a batched read's
 * viewer; a null there is no one's friend). `probe` (the default): probed per row in the friends primary key. The
 * OFFSET is there for PostgreSQL: without it the planner turns the EXISTS into a hashed subplan of every
 * friend of the viewer, built once per statement even when the statement tests a few dozen rows (1.9-2.5 ms for a
 * viewer with 8,600 friends, the seeded world's hub, against 0.02 ms a probe); it does not rewrite an EXISTS whose
 * subquery has an OFFSET. Without `probe` the planner may hash, the cheaper plan for a statement that tests every row
 * of a table. SQLite probes either way.
 */
export function isFriendOf(
  viewerUuid: string | RawBuilder<string | null>,
  owner: RawBuilder<unknown>,
  probe = true,
): RawBuilder<SqlBool> {
  const planAsProbe = probe ? PLAN_AS_PROBE : sql``;
  return sql<SqlBool>`exists (select 1 from friends f
    where f.user_uuid = ${viewerUuid} and f.friend_uuid = ${owner}${planAsProbe})`;
}

/**
 * The one visibility rule, as a query condition: a guest sees `public` items; a user also sees their own items
 * and the `friends` items of their confirmed friends. `ownerColumn` and `visibilityColumn` name the item's columns
 * (e.g. 'posts.user_uuid', 'posts.visibility'); a comment passes its post's columns. `probe`: the friends test as
 * isFriendOf's probe, for statements that test a bounded number of rows (a walk to a limit).
 */
export function visibleTo(
  viewerUuid: string | null,
  ownerColumn: string,
  visibilityColumn: string,
  probe = false,
): Expression<SqlBool> {
  const owner = sql.ref(ownerColumn);
  const visibility = sql.ref(visibilityColumn);
  if (viewerUuid === null) return sql<SqlBool>`${visibility} = 'public'`;
  return sql<SqlBool>`(${visibility} = 'public' or ${owner} = ${viewerUuid} or (${visibility} = 'friends' and ${isFriendOf(viewerUuid, owner, probe)}))`;
}
