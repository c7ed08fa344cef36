import { type Expression, type Insertable, type SqlBool, sql, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { applyFilters, applyOrderAndWindow, type ListQuery, type Whitelist } from '../../http/list-query.ts';
import { visibleTo } from '../connection/visibility.ts';
import { TARGET_TYPES } from '../target/target.repository.ts';
import type { TagAssociationTable } from './tag-association.table.ts';

/** A stored tag association row. */
export type TagAssociationRow = TagAssociationTable;

/** Whitelist of the tag association list: property name to trusted column. */
export const ASSOCIATION_WHITELIST: Whitelist = {
  uuid: { column: 'uuid', type: 'uuid' },
  tag_uuid: { column: 'tag_uuid', type: 'uuid' },
  user_uuid: { column: 'user_uuid', type: 'uuid' },
  target_uuid: { column: 'target_uuid', type: 'uuid' },
  target_type: { column: 'target_type', type: 'enum', values: TARGET_TYPES },
  created_at: { column: 'created_at', type: 'datetime' },
};

/**
 * An association is visible when its target is: posts, comments (through their post) and media by the visibility
 * rule, messages to their sender and recipient, connections to either side, users and networks while they exist.
 * The outer table must be aliased `ta`.
 */
export function targetVisibleTo(viewer: string | null): Expression<SqlBool> {
  const me = viewer ?? '';
  return sql<SqlBool>`(
    (ta.target_type = 'post' and exists (select 1 from posts vp where vp.uuid = ta.target_uuid
      and ${visibleTo(viewer, 'vp.user_uuid', 'vp.visibility')}))
    or (ta.target_type = 'comment' and exists (select 1 from comments vc join posts vp on vp.uuid = vc.post_uuid
      where vc.uuid = ta.target_uuid and ${visibleTo(viewer, 'vp.user_uuid', 'vp.visibility')}))
    or (ta.target_type = 'media' and exists (select 1 from media vm where vm.uuid = ta.target_uuid
      and ${visibleTo(viewer, 'vm.user_uuid', 'vm.visibility')}))
    or (ta.target_type = 'messages' and exists (select 1 from messages vg where vg.uuid = ta.target_uuid
      and (vg.user_uuid = ${me} or vg.recipient_uuid = ${me})))
    or (ta.target_type = 'connection' and exists (select 1 from connections vk where vk.uuid = ta.target_uuid
      and (vk.user_uuid = ${me} or vk.target_user_uuid = ${me})))
    or (ta.target_type = 'user' and exists (select 1 from users vu where vu.uuid = ta.target_uuid))
    or (ta.target_type = 'network' and exists (select 1 from networks vn where vn.uuid = ta.target_uuid))
  )`;
}

/**
 * A tag is visible to `viewer` (null for a guest) when it is an emotion, has no association at all (created through
 * tags.create), or has at least one association whose target the viewer may see (targetVisibleTo): a hashtag or
 * mention used only in private posts does not exist for anyone else. `tagTable` names the outer tags table or its
 * alias (a trusted identifier, e.g. 'tags' or 't'); for the tag list, single tags, and '#' searches.
 */
export function tagVisibleTo(viewer: string | null, tagTable: string): Expression<SqlBool> {
  const uuid = sql.ref(`${tagTable}.uuid`);
  const tagType = sql.ref(`${tagTable}.tag_type`);
  return sql<SqlBool>`(${tagType} = 'emotion'
    or not exists (select 1 from tag_associations ta where ta.tag_uuid = ${uuid})
    or exists (select 1 from tag_associations ta where ta.tag_uuid = ${uuid} and ${targetVisibleTo(viewer)}))`;
}

const COLUMNS = [
  'ta.uuid',
  'ta.tag_uuid',
  'ta.user_uuid',
  'ta.target_uuid',
  'ta.target_type',
  'ta.language',
  'ta.created_at',
  'ta.updated_at',
] as const;

/** An association by uuid; with `viewer` given (null for a guest) only if its target is visible to them. */
export async function findAssociationByUuid(
  db: Db,
  uuid: string,
  viewer?: string | null,
): Promise<TagAssociationRow | undefined> {
  return db
    .selectFrom('tag_associations as ta')
    .select(COLUMNS)
    .where('ta.uuid', '=', uuid)
    .$if(viewer !== undefined, (q) => q.where(targetVisibleTo(viewer ?? null)))
    .executeTakeFirst();
}

/** The association of a tag, target and user, if any. */
export async function findAssociationByKey(
  db: Db,
  tagUuid: string,
  targetUuid: string,
  userUuid: string,
): Promise<TagAssociationRow | undefined> {
  return db
    .selectFrom('tag_associations as ta')
    .select(COLUMNS)
    .where('ta.tag_uuid', '=', tagUuid)
    .where('ta.target_uuid', '=', targetUuid)
    .where('ta.user_uuid', '=', userUuid)
    .executeTakeFirst();
}

function listBase(db: Db, lq: ListQuery, language: string | undefined, viewer: string | null) {
  const q = db
    .selectFrom('tag_associations as ta')
    .$if(language !== undefined && lq.uuids === undefined, (qb) =>
      qb.where('ta.language', '=', language ?? ''),
    );
  // The filters come before the visibility rule: SQLite tests the terms in order, and the rule's subqueries are the
  // expensive part, so a row a filter drops is never checked for visibility.
  return applyFilters(q, lq, 'uuid').where(targetVisibleTo(viewer));
}

/** One page of the associations visible to `viewer` under the list query, optionally of one target language. */
export async function listAssociationRows(
  db: Db,
  lq: ListQuery,
  language: string | undefined,
  viewer: string | null,
): Promise<TagAssociationRow[]> {
  const q = listBase(db, lq, language, viewer).select(COLUMNS);
  return applyOrderAndWindow(q, lq, 'uuid', [{ column: 'created_at', direction: 'desc' }]).execute();
}

/** How many associations match the list query (paging aside). */
export async function countAssociationRows(
  db: Db,
  lq: ListQuery,
  language: string | undefined,
  viewer: string | null,
): Promise<number> {
  const row = await listBase(db, lq, language, viewer)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * The uuids of the newest associations of each tag, at most `perTag` each, newest first. With `viewer` given (null
 * for a guest) only associations whose target the viewer may see, so a tag does not reveal private posts' uses.
 */
export async function findNewestAssociationUuids(
  db: Db,
  tagUuids: string[],
  perTag: number,
  viewer?: string | null,
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(tagUuids.map((u) => [u, []]));
  if (tagUuids.length === 0) return out;
  // One bounded index range per tag (tag_uuid, created_at, uuid), glued into one statement per 100 tags (SQLite
  // caps compound selects at 500). `nulls last` (created_at is never null) matches the list index's order on
  // PostgreSQL, which otherwise walks all associations by created_at looking for this tag's.
  const found: { uuid: string; tag_uuid: string; created_at: string }[] = [];
  const visible = viewer === undefined ? sql`` : sql`and ${targetVisibleTo(viewer)}`;
  for (let start = 0; start < tagUuids.length; start += 100) {
    const parts = tagUuids.slice(start, start + 100).map(
      (tag, i) =>
        sql`select * from (select ta.uuid, ta.tag_uuid, ta.created_at from tag_associations ta where ta.tag_uuid = ${tag}
          ${visible} order by ta.created_at desc nulls last, ta.uuid desc limit ${perTag}) ${sql.raw(`n${i}`)}`,
    );
    const result = await sql<{ uuid: string; tag_uuid: string; created_at: string }>`${sql.join(
      parts,
      sql` union all `,
    )}`.execute(db);
    found.push(...result.rows);
  }
  const rows = found.sort((a, b) =>
    a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
  );
  for (const r of rows) out.get(r.tag_uuid)?.push(r.uuid);
  return out;
}

/** Inserts associations, skipping any (tag, target, user) already stored; returns the tag of each inserted row. */
export async function insertAssociationsIgnoringConflicts(
  db: Db,
  rows: Insertable<TagAssociationTable>[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await db
    .insertInto('tag_associations')
    .values(rows)
    .onConflict((oc) => oc.columns(['tag_uuid', 'target_uuid', 'user_uuid']).doNothing())
    .returning('tag_uuid')
    .execute();
  return inserted.map((r) => r.tag_uuid);
}

/** Updates an association row (the caller checked that the new (tag, target, user) is free). */
export async function updateAssociationRow(
  db: Db,
  uuid: string,
  patch: Updateable<TagAssociationTable>,
): Promise<void> {
  await db.updateTable('tag_associations').set(patch).where('uuid', '=', uuid).execute();
}

/** Deletes associations by uuid; returns the tag of each deleted row. */
export async function deleteAssociationsByUuids(db: Db, uuids: string[]): Promise<string[]> {
  if (uuids.length === 0) return [];
  const rows = await db
    .deleteFrom('tag_associations')
    .where('uuid', 'in', uuids)
    .returning('tag_uuid')
    .execute();
  return rows.map((r) => r.tag_uuid);
}

/** Deletes every association of a target; returns the tag of each deleted row. */
export async function deleteAssociationsOfTarget(
  db: Db,
  targetType: string,
  targetUuid: string,
): Promise<string[]> {
  const rows = await db
    .deleteFrom('tag_associations')
    .where('target_type', '=', targetType)
    .where('target_uuid', '=', targetUuid)
    .returning('tag_uuid')
    .execute();
  return rows.map((r) => r.tag_uuid);
}

/** Deletes the associations of every comment of a post (the post's deletion removes its comments). */
export async function deleteAssociationsOfPostComments(db: Db, postUuid: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('tag_associations')
    .where('target_type', '=', 'comment')
    .where('target_uuid', 'in', (eb) =>
      eb.selectFrom('comments').select('comments.uuid').where('comments.post_uuid', '=', postUuid),
    )
    .returning('tag_uuid')
    .execute();
  return rows.map((r) => r.tag_uuid);
}

/**
 * Deletes what a user's deletion takes away: the associations the user made and those on the user, on their
 * posts (and every comment under them), comments, media, messages and networks.
 */
export async function deleteAssociationsOfUser(db: Db, userUuid: string): Promise<string[]> {
  const u = userUuid;
  const rows = await db
    .deleteFrom('tag_associations')
    .where(
      sql<SqlBool>`user_uuid = ${u}
      or (target_type = 'user' and target_uuid = ${u})
      or (target_type = 'post' and target_uuid in (select uuid from posts where user_uuid = ${u}))
      or (target_type = 'comment' and target_uuid in (select uuid from comments where user_uuid = ${u}
          or post_uuid in (select uuid from posts where user_uuid = ${u})))
      or (target_type = 'media' and target_uuid in (select uuid from media where user_uuid = ${u}))
      or (target_type = 'messages' and target_uuid in (select uuid from messages
          where user_uuid = ${u} or recipient_uuid = ${u}))
      or (target_type = 'network' and target_uuid in (select uuid from networks where user_uuid = ${u}))`,
    )
    .returning('tag_uuid')
    .execute();
  return rows.map((r) => r.tag_uuid);
}

/** Deletes every association of a tag; returns how many there were. */
export async function deleteAssociationsOfTag(db: Db, tagUuid: string): Promise<number> {
  const r = await db.deleteFrom('tag_associations').where('tag_uuid', '=', tagUuid).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The hashtag and mention associations a target's author holds on it (the ones extraction manages). */
export async function findExtractedAssociations(
  db: Db,
  targetType: string,
  targetUuid: string,
  userUuid: string,
): Promise<{ uuid: string; tag_uuid: string }[]> {
  return db
    .selectFrom('tag_associations as ta')
    .innerJoin('tags as t', 't.uuid', 'ta.tag_uuid')
    .select(['ta.uuid', 'ta.tag_uuid'])
    .where('ta.target_type', '=', targetType)
    .where('ta.target_uuid', '=', targetUuid)
    .where('ta.user_uuid', '=', userUuid)
    .where('t.tag_type', 'in', ['hashtag', 'mention'])
    .execute();
}

/** Copies a target's (new) language onto every association of it, for the list's language filter. */
export async function setTargetLanguage(
  db: Db,
  targetType: string,
  targetUuid: string,
  language: string | null,
): Promise<void> {
  await db
    .updateTable('tag_associations')
    .set({ language })
    .where('target_type', '=', targetType)
    .where('target_uuid', '=', targetUuid)
    .where((eb) =>
      language === null
        ? eb('language', 'is not', null)
        : eb.or([eb('language', 'is', null), eb('language', '<>', language)]),
    )
    .execute();
}

/** The text, language and author of a post or comment, for tag extraction. */
export async function findContentText(
  db: Db,
  kind: 'post' | 'comment',
  uuid: string,
): Promise<{ body: string; language: string; user_uuid: string } | undefined> {
  if (kind === 'post') {
    return db
      .selectFrom('posts')
      .select(['body', 'language', 'user_uuid'])
      .where('uuid', '=', uuid)
      .executeTakeFirst();
  }
  return db
    .selectFrom('comments')
    .select(['body', 'language', 'user_uuid'])
    .where('uuid', '=', uuid)
    .executeTakeFirst();
}
