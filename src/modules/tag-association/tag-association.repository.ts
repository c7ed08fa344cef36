import {
  type Expression,
  type Insertable,
  type QueryCreator,
  type RawBuilder,
  type SqlBool,
  sql,
  type Updateable,
} from 'kysely';
import type { Database, Db, Dialect } from '../../db/database.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { queryTemplate } from '../../db/query-template.ts';
import {
  applyFilters,
  applyOrderAndWindow,
  type ListQuery,
  lateRowsFor,
  type Whitelist,
} from '../../http/list-query.ts';
import { isFriendOf, PLAN_AS_PROBE } from '../connection/visibility.ts';
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
  updated_at: { column: 'updated_at', type: 'datetime' },
};

// The audiences an owner sees of their own besides public ones (`none`, a missing target, is seen by no one). A
// fixed list, so each is an index range.
const OWN_AUDIENCES = sql`('friends', 'private', 'parties')`;
// The condition of the partial index of non-public rows (migration 0006), repeated literally in the queries it
// serves: SQLite uses a partial index only when the WHERE clause holds its condition as a term.
const NOT_PUBLIC = sql<SqlBool>`ta.audience <> 'public'`;
// NOT_PUBLIC as two ranges of an index whose next key after the tag is the audience: PostgreSQL tests `<>` on every
// entry of the tag instead.
const BELOW_PUBLIC = sql<SqlBool>`ta.audience < 'public'`;
const ABOVE_PUBLIC = sql<SqlBool>`ta.audience > 'public'`;

/**
 * An association is visible when its target is. Migration 0006 copies the target's audience onto the association
 * (audience, audience_owner, audience_other; database triggers keep the copy), so the rule reads the row alone: a
 * guest sees `public`; a user also sees everything they own (their posts, their posts' comments, their media,
 * messages they sent, connections they asked for), `parties` rows they are the other side of (messages they
 * received, connections they were asked for), and `friends` rows of their confirmed friends. The audience `none`
 * (the target is gone) is visible to no one. The outer table must be aliased `ta`. `viewer` may be a column holding
 * a viewer per row (a batched read's): a null there makes every test but the public one NULL, so as a filter (WHERE,
 * AND) it keeps what a guest sees; not for NOT or a selected value.
 */
export function targetVisibleTo(viewer: string | null | RawBuilder<string | null>): Expression<SqlBool> {
  if (viewer === null) return sql<SqlBool>`ta.audience = 'public'`;
  return sql<SqlBool>`(ta.audience = 'public'
    or (ta.audience_owner = ${viewer} and ta.audience in ${OWN_AUDIENCES})
    or (ta.audience = 'parties' and ta.audience_other = ${viewer})
    or (ta.audience = 'friends' and ${isFriendOf(viewer, sql.ref('ta.audience_owner'))}))`;
}

/**
 * targetVisibleTo as disjoint parts whose counts add up to the visible count. Each part is one index range or a few:
 * under a tag filter ranges of (tag_uuid, audience, audience_owner), one per audience or friend; without one, ranges
 * of the partial index of non-public rows; messages and connections received from the partial `parties` index. The
 * OR of targetVisibleTo would make the engines test every row instead.
 */
function visibleParts(viewer: string | null): Expression<SqlBool>[] {
  const pub = sql<SqlBool>`ta.audience = 'public'`;
  if (viewer === null) return [pub];
  return [
    pub,
    sql<SqlBool>`${NOT_PUBLIC} and ta.audience in ${OWN_AUDIENCES} and ta.audience_owner = ${viewer}`,
    sql<SqlBool>`ta.audience = 'parties' and ta.audience_other = ${viewer} and ta.audience_owner <> ${viewer}`,
    sql<SqlBool>`${NOT_PUBLIC} and ta.audience = 'friends' and ta.audience_owner <> ${viewer}
      and ta.audience_owner in (select f.friend_uuid from friends f where f.user_uuid = ${viewer})`,
  ];
}

/**
 * The tags visible to everybody whatever their uses: emotions, and tags made through tags.create (standalone). A
 * standalone tag stays public when it is used where others cannot see: hiding it then would let any user hide a
 * published tag from everyone by one private use (its associations_count, the total, still moves with hidden uses).
 * `tagTable` as in tagVisibleTo.
 */
export function visibleWithoutUse(tagTable: string): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${sql.ref(`${tagTable}.tag_type`)} = 'emotion' or ${sql.ref(`${tagTable}.standalone`)} = 1)`;
}

/**
 * A tag is visible to `viewer` (null for a guest) when it is an emotion, was made through tags.create (standalone),
 * or has at least one association whose target the viewer may see (targetVisibleTo): a hashtag or
 * mention used only in private posts does not exist for anyone else. Each test probes the tag's own index entries,
 * cheapest and likeliest first; the friends test walks the tag's `friends` rows (few on a tag nobody used in
 * public) and probes the friends table, rather than probing the tag once per friend of the viewer. `tagTable` names
 * the outer tags table or its alias (a trusted identifier, e.g. 'tags' or 't'); for the tag list, single tags, and
 * '#' searches. Each EXISTS is planned as a probe (PLAN_AS_PROBE): the hashed alternatives PostgreSQL planned
 * besides cost the tag list a third of its 0.75 ms of planning per statement, and ran no faster where it took them.
 */
export function tagVisibleTo(viewer: string | null, tagTable: string): Expression<SqlBool> {
  const uuid = sql.ref(`${tagTable}.uuid`);
  const has = (cond: Expression<SqlBool>) =>
    sql<SqlBool>`exists (select 1 from tag_associations ta where ta.tag_uuid = ${uuid} and ${cond}${PLAN_AS_PROBE})`;
  const guest = sql<SqlBool>`${visibleWithoutUse(tagTable)} or ${has(sql`ta.audience = 'public'`)}`;
  if (viewer === null) return sql<SqlBool>`(${guest})`;
  // The friends test without isFriendOf's probe here: over a whole tag list PostgreSQL's plan of it (per tag, the
  // viewer's friends hashed once) is the cheap one; the probe made it hash every friends-only use of every tag
  // (a count of the tags visible to a viewer with 8,600 friends: 0.8 -> 1.7 s).
  const friend = isFriendOf(viewer, sql.ref('ta.audience_owner'), false);
  return sql<SqlBool>`(${guest}
    or ${has(sql`ta.audience in ${OWN_AUDIENCES} and ta.audience_owner = ${viewer}`)}
    or ${has(sql`ta.audience = 'parties' and ta.audience_other = ${viewer}`)}
    or ${has(sql`ta.audience = 'friends' and ${friend}`)})`;
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

/**
 * An association by uuid; with `viewer` given (null for a guest) only if its target is visible to them. `forUpdate`
 * locks it until the transaction ends (PostgreSQL only).
 */
export async function findAssociationByUuid(
  db: Db,
  uuid: string,
  viewer?: string | null,
  forUpdate = false,
): Promise<TagAssociationRow | undefined> {
  return db
    .selectFrom('tag_associations as ta')
    .modifyFront(PREPARED)
    .select(COLUMNS)
    .where('ta.uuid', '=', uuid)
    .$if(viewer !== undefined, (q) => q.where(targetVisibleTo(viewer ?? null)))
    .$if(forUpdate, (q) => q.forUpdate())
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

// Nearly every association is of a post: a filter on another target type must read the type's index.
const SKEWED_ON_SQLITE = new Set(['target_type']);

function listBase(db: Db, dialect: Dialect, lq: ListQuery, language: string | undefined) {
  const q = db
    .selectFrom('tag_associations as ta')
    .$if(language !== undefined && lq.uuids === undefined, (qb) =>
      qb.where('ta.language', '=', language ?? ''),
    );
  return applyFilters(q, lq, 'uuid', dialect === 'sqlite' ? SKEWED_ON_SQLITE : undefined);
}

/** One page of the associations visible to `viewer` under the list query, optionally of one target language. */
export async function listAssociationRows(
  db: Db,
  dialect: Dialect,
  lq: ListQuery,
  language: string | undefined,
  viewer: string | null,
): Promise<TagAssociationRow[]> {
  const q = listBase(db, dialect, lq, language).where(targetVisibleTo(viewer)).select(COLUMNS);
  return applyOrderAndWindow(
    q,
    lq,
    'uuid',
    [{ column: 'created_at', direction: 'desc' }],
    lateRowsFor(dialect),
  ).execute();
}

/**
 * How many associations visible to `viewer` match the list query (paging aside): the sum of one count per
 * disjoint visibility part, so a popular tag's total is a few index range counts, not a test of every row.
 */
export async function countAssociationRows(
  db: Db,
  dialect: Dialect,
  lq: ListQuery,
  language: string | undefined,
  viewer: string | null,
): Promise<number> {
  const count = (part: Expression<SqlBool> | null) =>
    sql`(${listBase(db, dialect, lq, language)
      .$if(part !== null, (q) => q.where(part as Expression<SqlBool>))
      .select((eb) => eb.fn.countAll().as('n'))})`;
  const [pub, ...rest] = visibleParts(viewer);
  const onlyFilters = lq.uuids === undefined && language === undefined;
  const unfiltered = onlyFilters && lq.filters.length === 0;
  const tag = onlyFilters ? singleTagFilter(lq) : undefined;
  // Without any filter the public part is nine tenths of the table: the table's count (SQLite counts a b-tree's
  // cells page by page without decoding them) less the partial index of the other rows took 59 ms of CPU where the
  // public range took 83 to 118 (2.3 million rows). A popular tag's public part is most of its rows too: its stored
  // count (adjusted in the transaction of every API write of associations, checked by `check`) less its other
  // audiences' ranges (docs/tag-associations.md, "Totals of one tag's associations").
  const publicPart = unfiltered
    ? sql`${count(null)} - ${count(NOT_PUBLIC)}`
    : tag !== undefined
      ? sql`coalesce((select t.associations_count from tags t where t.uuid = ${tag}), 0) - ${count(BELOW_PUBLIC)}
          - ${count(ABOVE_PUBLIC)}`
      : count(pub as Expression<SqlBool>);
  const r = await sql<{ n: number | string }>`select ${sql.join(
    [publicPart, ...rest.map((part) => count(part))],
    sql` + `,
  )} as n`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

/** The tag of a list query whose one filter is `tag_uuid` equal to a value, else undefined. */
function singleTagFilter(lq: ListQuery): string | undefined {
  const [only, ...others] = lq.filters;
  if (only === undefined || others.length > 0) return undefined;
  return only.column === 'tag_uuid' && only.op === 'eq' && typeof only.value === 'string'
    ? only.value
    : undefined;
}

/**
 * SQL of the uuids of the newest associations of the tag `tagRef` (a trusted column reference, e.g. 't.uuid'), at
 * most `perTag`, newest first, comma-joined (none: NULL on SQLite, '' on PostgreSQL); with `viewer` given (null for a
 * guest, or a column of viewers: targetVisibleTo) only those whose target the viewer may see, so a tag does not
 * reveal private posts' uses. One bounded walk of the covering (tag_uuid, created_at, uuid, audience...) index per
 * tag, aggregated to one value: a tag and its 100 associations come back as one row, not 101.
 */
export function newestAssociationsOf(
  dialect: Dialect,
  tagRef: string,
  perTag: number,
  viewer?: string | null | RawBuilder<string | null>,
): RawBuilder<string | null> {
  const visible = viewer === undefined ? sql`` : sql`and ${targetVisibleTo(viewer)}`;
  // `nulls last` (created_at is never null) matches the index order on PostgreSQL, whose default for desc is first.
  const walk = (columns: RawBuilder<unknown>) => sql`select ${columns} from tag_associations ta
    where ta.tag_uuid = ${sql.ref(tagRef)} ${visible}
    order by ta.created_at desc nulls last, ta.uuid desc limit ${perTag}`;
  // PostgreSQL (before 16) sorts the input of an aggregate with ORDER BY again, though the walk is in that order;
  // ARRAY(subquery) takes the rows in the subquery's order: 1.55 -> 1.31 ms for the tag list's 20 tags.
  if (dialect === 'postgres') return sql<string | null>`array_to_string(array(${walk(sql`ta.uuid`)}), ',')`;
  return sql<string | null>`(select string_agg(n.uuid, ',' order by n.created_at desc, n.uuid desc)
    from (${walk(sql`ta.uuid, ta.created_at`)}) n)`;
}

/** The uuid list of a newestAssociationsOf value. */
export function splitUuids(joined: string | null | undefined): string[] {
  return joined ? joined.split(',') : [];
}

/**
 * The uuids of the newest associations of each tag, at most `perTag` each, newest first. With `viewer` given (null
 * for a guest) only associations whose target the viewer may see (newestAssociationsOf).
 */
export async function findNewestAssociationUuids(
  db: Db,
  dialect: Dialect,
  tagUuids: string[],
  perTag: number,
  viewer?: string | null,
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(tagUuids.map((u) => [u, []]));
  if (tagUuids.length === 0) return out;
  // PostgreSQL: prepared, the uuids bound as one array, so one text serves every page length (a list of parameters
  // made a text per length). Its plan, primary-key probes each with a walk of its tag's index range, does not depend
  // on the values; planning the visibility rule cost 0.4 ms a run under the uncached tag list's load.
  const pg = dialect === 'postgres';
  const rows = await db
    .selectFrom('tags as t')
    .$if(pg, (q) => q.modifyFront(PREPARED))
    .select(['t.uuid', newestAssociationsOf(dialect, 't.uuid', perTag, viewer).as('associations')])
    .where((eb) => (pg ? eb('t.uuid', '=', sql<string>`any(${tagUuids})`) : eb('t.uuid', 'in', tagUuids)))
    .execute();
  for (const r of rows) out.set(r.uuid, splitUuids(r.associations));
  return out;
}

/**
 * The insert of associations that skips any (tag, target, user) already stored, returning the tag of each inserted
 * row; unexecuted, so a statement can hold it as a common table expression (insertAssociationsCounted).
 */
export function insertAssociationsQuery(qc: QueryCreator<Database>, rows: Insertable<TagAssociationTable>[]) {
  return qc
    .insertInto('tag_associations')
    .values(rows)
    .onConflict((oc) => oc.columns(['tag_uuid', 'target_uuid', 'user_uuid']).doNothing())
    .returning('tag_uuid');
}

/** Inserts associations, skipping any (tag, target, user) already stored; returns the tag of each inserted row. */
export async function insertAssociationsIgnoringConflicts(
  db: Db,
  rows: Insertable<TagAssociationTable>[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await insertAssociationsTemplate(db, { rows });
  return inserted.rows.map((r) => r.tag_uuid);
}

const insertAssociationsTemplate = queryTemplate(
  (db, { rows }: { rows: Insertable<TagAssociationTable>[] }) => insertAssociationsQuery(db, rows),
);

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
 * posts (and every comment under them), comments, media, messages and networks, and the uses of their mention tag
 * (whose key is their username key) by anyone. One index range per part, united: as one OR of the parts PostgreSQL
 * read the whole table (1,037 ms for a user of the 1M world, against 59 ms).
 */
export async function deleteAssociationsOfUser(db: Db, userUuid: string): Promise<string[]> {
  const u = userUuid;
  const on = (targetType: string, targets: RawBuilder<unknown>) =>
    sql`select ta.uuid from tag_associations ta
      where ta.target_type = ${targetType} and ta.target_uuid in (${targets})`;
  const parts = [
    sql`select ta.uuid from tag_associations ta where ta.user_uuid = ${u}`,
    sql`select ta.uuid from tag_associations ta where ta.target_type = 'user' and ta.target_uuid = ${u}`,
    on('post', sql`select uuid from posts where user_uuid = ${u}`),
    on('comment', sql`select uuid from comments where user_uuid = ${u}`),
    on(
      'comment',
      sql`select c.uuid from comments c join posts p on p.uuid = c.post_uuid where p.user_uuid = ${u}`,
    ),
    on('media', sql`select uuid from media where user_uuid = ${u}`),
    on('messages', sql`select uuid from messages where user_uuid = ${u}`),
    on('messages', sql`select uuid from messages where recipient_uuid = ${u}`),
    on('network', sql`select uuid from networks where user_uuid = ${u}`),
    sql`select ta.uuid from tag_associations ta where ta.tag_uuid in (select t.uuid from tags t
      join users us on t.name_key = us.username_key where us.uuid = ${u} and t.tag_type = 'mention')`,
  ];
  const rows = await db
    .deleteFrom('tag_associations')
    .where(sql<SqlBool>`uuid in (${sql.join(parts, sql` union all `)})`)
    .returning('tag_uuid')
    .execute();
  return rows.map((r) => r.tag_uuid);
}

/** Deletes every association of a tag; returns how many there were. */
export async function deleteAssociationsOfTag(db: Db, tagUuid: string): Promise<number> {
  const r = await db.deleteFrom('tag_associations').where('tag_uuid', '=', tagUuid).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The uuids of the reactions (associations of emotion tags) on a target, in uuid order. */
export async function findReactionUuidsOn(db: Db, targetType: string, targetUuid: string): Promise<string[]> {
  const rows = await db
    .selectFrom('tag_associations as ta')
    .innerJoin('tags as t', 't.uuid', 'ta.tag_uuid')
    .select('ta.uuid')
    .where('ta.target_type', '=', targetType)
    .where('ta.target_uuid', '=', targetUuid)
    .where('t.tag_type', '=', 'emotion')
    .orderBy('ta.uuid')
    .execute();
  return rows.map((r) => r.uuid);
}

/** Which of these associations still exist. */
export async function findExistingAssociationUuids(db: Db, uuids: string[]): Promise<string[]> {
  if (uuids.length === 0) return [];
  const rows = await db.selectFrom('tag_associations').select('uuid').where('uuid', 'in', uuids).execute();
  return rows.map((r) => r.uuid);
}

/** The reactions (associations of emotion tags) a user made, with what each is on, in uuid order. */
export async function findReactionsByUser(db: Db, userUuid: string) {
  return db
    .selectFrom('tag_associations as ta')
    .innerJoin('tags as t', 't.uuid', 'ta.tag_uuid')
    .select(['ta.uuid', 'ta.target_uuid', 'ta.target_type'])
    .where('ta.user_uuid', '=', userUuid)
    .where('t.tag_type', '=', 'emotion')
    .orderBy('ta.uuid')
    .execute();
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

/** The audience an association copies from a post's (or a comment's post's) visibility, as migration 0006 maps it. */
export function audienceOfVisibility(visibility: string): string {
  return visibility === 'public' || visibility === 'friends' || visibility === 'private'
    ? visibility
    : 'private';
}

/**
 * A post or comment as tag extraction needs it: its text, language and author, and the audience its associations
 * copy (for a comment, its post's visibility and owner).
 */
export interface ContentText {
  body: string;
  language: string;
  user_uuid: string;
  audience: string;
  audience_owner: string;
}

/** The text, language, author and association audience of a post or comment, for tag extraction. */
export async function findContentText(
  db: Db,
  kind: 'post' | 'comment',
  uuid: string,
): Promise<ContentText | undefined> {
  const row =
    kind === 'post'
      ? await db
          .selectFrom('posts as p')
          .select(['p.body', 'p.language', 'p.user_uuid', 'p.visibility', 'p.user_uuid as owner'])
          .where('p.uuid', '=', uuid)
          .executeTakeFirst()
      : await db
          .selectFrom('comments as c')
          .innerJoin('posts as p', 'p.uuid', 'c.post_uuid')
          .select(['c.body', 'c.language', 'c.user_uuid', 'p.visibility', 'p.user_uuid as owner'])
          .where('c.uuid', '=', uuid)
          .executeTakeFirst();
  if (!row) return undefined;
  return {
    body: row.body,
    language: row.language,
    user_uuid: row.user_uuid,
    audience: audienceOfVisibility(row.visibility),
    audience_owner: row.owner,
  };
}

/** A user a text mentions, with the mention tag stored under the user's username key, if any. */
export interface MentionedUser {
  username: string;
  username_key: string;
  tag: { uuid: string; name_key: string } | undefined;
}

/** What a text's tags name: the stored hashtags among some keys, and the users some `@names` mention. */
export interface ContentTags {
  hashtags: { uuid: string; name_key: string }[];
  users: MentionedUser[];
}

/** The keys findContentTags looks up: hashtag keys, and the lower-cased `@names`. */
export type ContentTagKeys = {
  hashtagKeys: string[];
  usernameKeys: string[];
};

/** A row of contentTagsSelect: a stored hashtag, or a mentioned user with their mention tag if any. */
export interface ContentTagRow {
  kind: string;
  username: string | null;
  username_key: string | null;
  tag_uuid: string | null;
  tag_key: string | null;
}

/**
 * The select of findContentTags: the hashtags, the mentioned users, or both in a UNION ALL (an empty list is part
 * of the shape a template keeps). Unexecuted: tag.repository embeds it in PostgreSQL's one-statement association of
 * a new text.
 */
export function contentTagsSelect(db: Db, { hashtagKeys, usernameKeys }: ContentTagKeys, lock: boolean) {
  const hashtags = db
    .selectFrom('tags')
    .select([
      sql<string>`'hashtag'`.as('kind'),
      sql<string | null>`null`.as('username'),
      sql<string | null>`null`.as('username_key'),
      sql<string | null>`uuid`.as('tag_uuid'),
      sql<string | null>`name_key`.as('tag_key'),
    ])
    .where('tag_type', '=', 'hashtag')
    .where('name_key', 'in', hashtagKeys);
  const users = (qc: QueryCreator<Database>) =>
    qc
      .selectFrom('users as u')
      .leftJoin('tags as t', (join) =>
        join.on('t.tag_type', '=', 'mention').onRef('t.name_key', '=', 'u.username_key'),
      )
      .select(['u.username', 'u.username_key', 't.uuid as tag_uuid', 't.name_key as tag_key'])
      .where('u.username_key', 'in', usernameKeys)
      .$if(lock, (q) => q.forKeyShare('u').skipLocked());
  const mentioned = db
    .with('m', users)
    .selectFrom('m')
    .select([
      sql<string>`'mention'`.as('kind'),
      sql<string | null>`m.username`.as('username'),
      sql<string | null>`m.username_key`.as('username_key'),
      'm.tag_uuid',
      'm.tag_key',
    ]);
  if (usernameKeys.length === 0) return hashtags;
  return hashtagKeys.length === 0 ? mentioned : mentioned.unionAll(hashtags);
}

const findContentTagsQuery = queryTemplate((db, keys: ContentTagKeys, lock: boolean) =>
  contentTagsSelect(db, keys, lock),
);

/** What rows of contentTagsSelect name: the stored hashtags and the mentioned users. */
export function contentTagsOf(rows: readonly ContentTagRow[]): ContentTags {
  const out: ContentTags = { hashtags: [], users: [] };
  for (const r of rows) {
    const tag =
      r.tag_uuid !== null && r.tag_key !== null ? { uuid: r.tag_uuid, name_key: r.tag_key } : undefined;
    if (r.kind === 'hashtag') {
      if (tag) out.hashtags.push(tag);
    } else if (r.username !== null && r.username_key !== null) {
      out.users.push({ username: r.username, username_key: r.username_key, tag });
    }
  }
  return out;
}

/**
 * The stored hashtags of some keys and the users of some `@names` (compared ignoring case), each user with the
 * mention tag whose key is their username key, in one statement: usernames are ASCII letters, digits and `_`, so
 * their tag key (normalizeTagName) is that lower-case key; the caller checks it and looks the tag up itself where it
 * is not. With `lock` (PostgreSQL only) the users' rows are key-share locked until the transaction ends, and a user
 * whose deletion holds the row is left out. The users are read in a CTE because PostgreSQL refuses a locking
 * clause in a UNION.
 */
export async function findContentTags(
  db: Db,
  hashtagKeys: string[],
  names: string[],
  lock = false,
): Promise<ContentTags> {
  if (hashtagKeys.length === 0 && names.length === 0) return { hashtags: [], users: [] };
  return contentTagsOf((await findContentTagsQuery(db, contentTagKeys(hashtagKeys, names), lock)).rows);
}

/** The keys contentTagsSelect looks up: the hashtag keys, and the `@names` lower-cased (compared ignoring case). */
export function contentTagKeys(hashtagKeys: string[], names: string[]): ContentTagKeys {
  return { hashtagKeys, usernameKeys: names.map((n) => n.toLowerCase()) };
}

/** An association whose copied audience differs from what its target gives (findAudienceMismatches). */
export interface AudienceMismatch {
  uuid: string;
  target_type: string;
  target_uuid: string;
  audience: string;
  audience_owner: string | null;
  audience_other: string | null;
  want_audience: string;
  want_owner: string | null;
  want_other: string | null;
}

// What each target kind gives: [kind, joins from `ta`, audience, owner, other]. The same mapping as migration 0006's
// triggers (a visibility other than public/friends/private is private; a missing target gives ('none', NULL, NULL)).
const visibilityAudience = (column: string) =>
  `case when ${column} is null then 'none' when ${column} in ('public', 'friends', 'private') then ${column} else 'private' end`;
const TARGET_AUDIENCES: [string, string, string, string, string][] = [
  [
    'post',
    'left join posts p on p.uuid = ta.target_uuid',
    visibilityAudience('p.visibility'),
    'p.user_uuid',
    'null',
  ],
  [
    'comment',
    'left join comments c on c.uuid = ta.target_uuid left join posts p on p.uuid = c.post_uuid',
    visibilityAudience('p.visibility'),
    'p.user_uuid',
    'null',
  ],
  [
    'media',
    'left join media m on m.uuid = ta.target_uuid',
    visibilityAudience('m.visibility'),
    'm.user_uuid',
    'null',
  ],
  [
    'messages',
    'left join messages g on g.uuid = ta.target_uuid',
    `case when g.uuid is null then 'none' else 'parties' end`,
    'g.user_uuid',
    'g.recipient_uuid',
  ],
  [
    'connection',
    'left join connections k on k.uuid = ta.target_uuid',
    `case when k.uuid is null then 'none' else 'parties' end`,
    'k.user_uuid',
    'k.target_user_uuid',
  ],
  [
    'user',
    'left join users u on u.uuid = ta.target_uuid',
    `case when u.uuid is null then 'none' else 'public' end`,
    'u.uuid',
    'null',
  ],
  [
    'network',
    'left join networks n on n.uuid = ta.target_uuid',
    `case when n.uuid is null then 'none' else 'public' end`,
    'n.user_uuid',
    'null',
  ],
];

/**
 * Associations whose audience columns disagree with their target (the `check` command), at most `limit`: one pass
 * per target kind, one primary-key probe per association. A healthy database has none, since triggers write them.
 */
export async function findAudienceMismatches(db: Db, limit: number): Promise<AudienceMismatch[]> {
  // Text compared null-safely on both engines ('' is never a stored value).
  const differs = (a: string, b: string) => `coalesce(${a}, '') <> coalesce(${b}, '')`;
  const parts = TARGET_AUDIENCES.map(
    ([kind, joins, audience, owner, other]) =>
      `select ta.uuid, ta.target_type, ta.target_uuid, ta.audience, ta.audience_owner, ta.audience_other,
        ${audience} as want_audience, ${owner} as want_owner, ${other} as want_other
      from tag_associations ta ${joins}
      where ta.target_type = '${kind}' and (${differs('ta.audience', audience)} or ${differs('ta.audience_owner', owner)}
        or ${differs('ta.audience_other', other)})`,
  );
  // A target type no kind knows has no audience.
  parts.push(`select ta.uuid, ta.target_type, ta.target_uuid, ta.audience, ta.audience_owner, ta.audience_other,
      'none' as want_audience, null as want_owner, null as want_other
    from tag_associations ta
    where ta.target_type not in (${TARGET_AUDIENCES.map(([kind]) => `'${kind}'`).join(', ')})
      and (ta.audience <> 'none' or ta.audience_owner is not null or ta.audience_other is not null)`);
  const r = await sql<AudienceMismatch>`${sql.raw(parts.join(' union all '))} limit ${limit}`.execute(db);
  return r.rows;
}
