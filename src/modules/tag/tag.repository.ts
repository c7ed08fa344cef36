import { type Insertable, type RawBuilder, type Selectable, sql, type Updateable } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { queryTemplate } from '../../db/query-template.ts';
import { applyFilters, applyOrderAndWindow, type ListQuery, type Whitelist } from '../../http/list-query.ts';
import {
  type ContentTagKeys,
  type ContentTagRow,
  type ContentTags,
  contentTagsOf,
  contentTagsSelect,
  insertAssociationsIgnoringConflicts,
  insertAssociationsQuery,
  newestAssociationsOf,
  splitUuids,
  tagVisibleTo,
  targetVisibleTo,
  visibleWithoutUse,
} from '../tag-association/tag-association.repository.ts';
import type { TagAssociationTable } from '../tag-association/tag-association.table.ts';
import { normalizeTagName, TAG_TYPES } from './normalize.ts';
import type { TagTable } from './tag.table.ts';

/** A stored tag row. */
export type TagRow = Selectable<TagTable>;

/** A tag row by uuid; with `viewer` given (null for a guest) only if the tag is visible to them (tagVisibleTo). */
export async function findTagByUuid(
  db: Db,
  uuid: string,
  viewer?: string | null,
): Promise<TagRow | undefined> {
  return db
    .selectFrom('tags')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(viewer !== undefined, (q) => q.where(tagVisibleTo(viewer ?? null, 'tags')))
    .executeTakeFirst();
}

/** A tag a viewer may see, with the uuids of the newest associations they may see. */
export type VisibleTag = { row: TagRow; associations: string[] };

/**
 * A tag row visible to `viewer` (null for a guest) with the uuids of its newest `perTag` associations the viewer
 * may see, in one statement (GET /tags/{uuid} on SQLite; PostgreSQL batches them, findVisibleTagsForViewersPg, which
 * must answer as this does). The visibility rule of tagVisibleTo, read off the same walk: a tag with an association
 * the viewer may see has a non-empty list; otherwise it is visible only as an emotion or a tag made through
 * tags.create (visibleWithoutUse). (tagVisibleTo's own subqueries made PostgreSQL plan for 4 ms of each 6 ms call.)
 */
export async function findVisibleTagWithAssociations(
  db: Db,
  dialect: Dialect,
  uuid: string,
  viewer: string | null,
  perTag: number,
): Promise<VisibleTag | undefined> {
  const found = await db
    .selectFrom('tags')
    // A lookup by primary key, prepared where PostgreSQL runs it alone (docs/decisions.md).
    .modifyFront(PREPARED)
    .selectAll()
    .select(newestAssociationsOf(dialect, 'tags.uuid', perTag, viewer).as('associations'))
    .select(visibleWithoutUse('tags').as('emotion_or_created'))
    .where('uuid', '=', uuid)
    .executeTakeFirst();
  return found ? visibleTagOf(found) : undefined;
}

/** A tag row read with its newest visible associations and visibleWithoutUse, if the viewer may see the tag. */
function visibleTagOf(
  found: TagRow & { associations: string | null; emotion_or_created: unknown },
): VisibleTag | undefined {
  const { associations, emotion_or_created, ...row } = found;
  const visibleAssociations = splitUuids(associations);
  if (visibleAssociations.length === 0 && !emotion_or_created) return undefined;
  return { row, associations: visibleAssociations };
}

/** One read of findVisibleTagsForViewersPg: a tag's uuid and its viewer (null for a guest). */
export interface TagViewerRead {
  uuid: string;
  viewer: string | null;
}

/**
 * findVisibleTagWithAssociations for several (tag, viewer) reads in one statement (PostgreSQL): the tag of each read
 * that exists and that its viewer may see, by the read's index in `reads`. The reads go as two arrays of one length,
 * so one prepared text serves any number of them; each read's viewer is a column of the statement, which the
 * visibility rule compares as it would a bound viewer (a null one sees what a guest sees).
 */
export async function findVisibleTagsForViewersPg(
  db: Db,
  reads: TagViewerRead[],
  perTag: number,
): Promise<Map<number, VisibleTag>> {
  const out = new Map<number, VisibleTag>();
  if (reads.length === 0) return out;
  const viewer = sql<string | null>`k.viewer`;
  // The ordinality is a bigint, which the pool's parser gives as a number.
  type Found = TagRow & { i: number | string; associations: string | null; emotion_or_created: unknown };
  // The text starts with the mark, as a prepared select must.
  const { rows } = await sql<Found>`select ${PREPARED} t.*, k.i,
      ${newestAssociationsOf('postgres', 't.uuid', perTag, viewer)} as associations,
      ${visibleWithoutUse('t')} as emotion_or_created
    from unnest(${reads.map((r) => r.uuid)}::text[], ${reads.map((r) => r.viewer)}::text[])
      with ordinality as k(tag_uuid, viewer, i)
    join tags t on t.uuid = k.tag_uuid`.execute(db);
  for (const { i, ...found } of rows) {
    const visible = visibleTagOf(found);
    if (visible) out.set(Number(i) - 1, visible);
  }
  return out;
}

/** The tag rows of these uuids (those that exist), in no particular order. */
export async function findTagsByUuids(db: Db, uuids: string[]): Promise<TagRow[]> {
  if (uuids.length === 0) return [];
  return db.selectFrom('tags').selectAll().where('uuid', 'in', uuids).execute();
}

/** The tag of a type with a normalized key. */
export async function findTagByKey(db: Db, tagType: string, key: string): Promise<TagRow | undefined> {
  return db
    .selectFrom('tags')
    .selectAll()
    .where('tag_type', '=', tagType)
    .where('name_key', '=', key)
    .executeTakeFirst();
}

/** The tags of a type whose normalized keys are in `keys`. */
export async function findTagsByKeys(db: Db, tagType: string, keys: string[]): Promise<TagRow[]> {
  if (keys.length === 0) return [];
  return db
    .selectFrom('tags')
    .selectAll()
    .where('tag_type', '=', tagType)
    .where('name_key', 'in', keys)
    .execute();
}

/** Inserts tags, skipping any whose (tag_type, name_key) another writer stored first. */
export async function insertTagsIgnoringConflicts(db: Db, rows: Insertable<TagTable>[]): Promise<void> {
  if (rows.length === 0) return;
  const sorted = [...rows].sort((a, b) => (a.name_key < b.name_key ? -1 : 1));
  await db
    .insertInto('tags')
    .values(sorted)
    .onConflict((oc) => oc.columns(['tag_type', 'name_key']).doNothing())
    .execute();
}

/** Inserts one tag; false when its (tag_type, name_key) is taken. */
export async function insertTag(db: Db, row: Insertable<TagTable>): Promise<boolean> {
  const inserted = await db
    .insertInto('tags')
    .values(row)
    .onConflict((oc) => oc.columns(['tag_type', 'name_key']).doNothing())
    .returning('uuid')
    .execute();
  return inserted.length === 1;
}

/** Updates a tag row; returns whether it existed. */
export async function updateTagRow(db: Db, uuid: string, patch: Updateable<TagTable>): Promise<boolean> {
  const r = await db.updateTable('tags').set(patch).where('uuid', '=', uuid).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Deletes a tag row; returns whether it existed. */
export async function deleteTagRow(db: Db, uuid: string): Promise<boolean> {
  const r = await db.deleteFrom('tags').where('uuid', '=', uuid).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

/**
 * Deletes the mention tag of a user (its key is their username key) once nothing uses it, unless it was made
 * through tags.create (standalone): the name may be registered again, and its tag then starts with the new spelling.
 */
export async function deleteUnusedMentionTagOf(db: Db, userUuid: string): Promise<void> {
  await db
    .deleteFrom('tags')
    .where('tag_type', '=', 'mention')
    .where('standalone', '=', 0)
    .where('name_key', '=', (eb) =>
      eb.selectFrom('users').select('username_key').where('uuid', '=', userUuid),
    )
    .where((eb) =>
      eb.not(
        eb.exists(
          eb.selectFrom('tag_associations as ta').select('ta.uuid').whereRef('ta.tag_uuid', '=', 'tags.uuid'),
        ),
      ),
    )
    .execute();
}

// Where a PostgreSQL writer stages its tag count deltas for the commit (migration 0016-tag-counts-at-commit).
const TAG_COUNT_DELTAS = 'social.tag_count_deltas';

/**
 * PostgreSQL: stages the staged deltas with `more` (a JSON array of [tag uuid, delta] pairs) appended; the expression
 * is true. Not the setting's text, which grows with every staging of the transaction and need not travel back.
 */
function stageDeltas(more: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`set_config(${TAG_COUNT_DELTAS},
    (coalesce(nullif(current_setting(${TAG_COUNT_DELTAS}, true), ''), '[]')::jsonb || ${more})::text,
    true) is not null`;
}

/**
 * Inserts associations, skipping any (tag, target, user) already stored, and counts them with adjustTagCounts' rules:
 * +1 for the tag of each inserted row, -1 for each tag in `removed` (associations the caller deleted in this
 * transaction). PostgreSQL: the insert stages its own counts, one round trip where an insert and then the staging
 * took two. SQLite: the insert, then adjustTagCounts. Returns the tag of each inserted row.
 */
export async function insertAssociationsCounted(
  db: Db,
  dialect: Dialect,
  rows: Insertable<TagAssociationTable>[],
  removed: string[] = [],
): Promise<string[]> {
  if (dialect !== 'postgres' || rows.length === 0) {
    const added = await insertAssociationsIgnoringConflicts(db, rows);
    await adjustTagCounts(db, dialect, countDeltas(added, removed));
    return added;
  }
  const removals = JSON.stringify(removed.map((uuid) => [uuid, -1]));
  const [row] = (await insertAndStageQuery(db, { rows, removals })).rows;
  if (row === undefined) throw new Error('the insert of associations returned no row');
  return row.tags;
}

// The count deltas of the rows a statement's `added` CTE inserted: +1 for the tag of each.
const ADDED_DELTAS = sql`coalesce((select jsonb_agg(jsonb_build_array(a.tag_uuid, 1)) from added a), '[]'::jsonb)`;

// A statement without FROM evaluates its one row, so the removals are staged even when every row was skipped; both
// expressions read the insert's rows, which a data-modifying CTE produces once, before either reads them.
const insertAndStageQuery = queryTemplate(
  (db, { rows, removals }: { rows: Insertable<TagAssociationTable>[]; removals: string }) => {
    const staged = stageDeltas(sql`${ADDED_DELTAS} || ${removals}::jsonb`);
    return db
      .with('added', (qc) => insertAssociationsQuery(qc, rows))
      .selectNoFrom([sql<string[]>`array(select a.tag_uuid from added a)`.as('tags'), staged.as('staged')]);
  },
);

/** The fields every association of a new text shares: all but its own uuid and tag. */
export type ContentAssociationFields = Omit<Insertable<TagAssociationTable>, 'uuid' | 'tag_uuid'> & {
  created_at: string;
  updated_at: string;
};

/**
 * PostgreSQL, a new text's stored tags in one round trip: looks up the hashtags and mentioned users as
 * findContentTags does (the users key-share locked, a user whose deletion holds the row left out), associates the
 * text with each hashtag found and each mention tag found under an ASCII username (whose tag key, normalizeTagName,
 * is the username key the lookup joins on), and stages their counts as insertAssociationsCounted does. Each
 * association takes one of `uuids` (at least one per key and name). Returns what the lookup found and the tags it
 * associated: the caller creates what is missing and associates the rest.
 */
export async function associateStoredContentTagsPg(
  db: Db,
  keys: ContentTagKeys,
  fields: ContentAssociationFields,
  uuids: string[],
): Promise<{ stored: ContentTags; associated: string[] }> {
  const [row] = (await associateStoredQuery(db, { ...keys, ...fields, uuids })).rows;
  if (row === undefined) throw new Error('the association of stored tags returned no row');
  return { stored: contentTagsOf(row.found), associated: row.associated };
}

// `found` is read twice, so PostgreSQL materializes it: the users are locked once. The row numbers pick the new rows'
// uuids. The one row without FROM stages the counts exactly once (insertAndStageQuery).
const associateStoredQuery = queryTemplate(
  (db, v: ContentTagKeys & ContentAssociationFields & { uuids: string[] }) => {
    const staged = stageDeltas(ADDED_DELTAS);
    return db
      .with('found', () => contentTagsSelect(db, v, true))
      .with(
        'wanted',
        () => sql`(select w.tag_uuid, row_number() over (order by w.tag_uuid) as n
          from (select distinct f.tag_uuid from found f where f.tag_uuid is not null
            and (f.kind = 'hashtag' or f.username ~ '^[A-Za-z0-9_]+$')) w)`,
      )
      .with(
        'added',
        () => sql`(insert into tag_associations (uuid, tag_uuid, user_uuid, target_uuid, target_type, language,
            audience, audience_owner, audience_other, created_at, updated_at)
          select (array[${sql.join(v.uuids)}]::text[])[w.n], w.tag_uuid, ${v.user_uuid}::text,
            ${v.target_uuid}::text, ${v.target_type}::text, ${v.language ?? null}::text, ${v.audience}::text,
            ${v.audience_owner ?? null}::text, ${v.audience_other ?? null}::text, ${v.created_at}::timestamptz,
            ${v.updated_at}::timestamptz
          from wanted w
          on conflict (tag_uuid, target_uuid, user_uuid) do nothing
          returning tag_uuid)`,
      )
      .selectNoFrom([
        sql<ContentTagRow[]>`coalesce((select json_agg(f) from found f), '[]'::json)`.as('found'),
        sql<string[]>`array(select w.tag_uuid from wanted w)`.as('associated'),
        staged.as('staged'),
      ]);
  },
);

/** Each tag's delta: +1 per appearance in `added`, -1 per appearance in `removed`. */
export function countDeltas(added: string[], removed: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of added) out.set(t, (out.get(t) ?? 0) + 1);
  for (const t of removed) out.set(t, (out.get(t) ?? 0) - 1);
  return out;
}

/** Tags whose counts one SQLite update moves. */
const COUNTS_PER_UPDATE = 1000;

/**
 * Adds each delta to its tag's associations_count (row-locked increments stay exact under concurrency). A post's
 * tags are popular rows that every writer of them queues on until its commit. PostgreSQL: the deltas are staged in
 * a transaction-local setting, added to any staged before in the transaction, and a deferred trigger adds them
 * during COMMIT in uuid order (migration 0016), so the rows stay locked for that update only and two writers never
 * hold one each and wait for the other. Every caller changes associations in the same transaction, which queues the
 * trigger. SQLite runs one write transaction at a time and adds them now.
 */
export async function adjustTagCounts(db: Db, dialect: Dialect, deltas: Map<string, number>): Promise<void> {
  const entries = [...deltas].filter(([, delta]) => delta !== 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  if (entries.length === 0) return;
  if (dialect === 'postgres') {
    await sql`select ${stageDeltas(sql`${JSON.stringify(entries)}::jsonb`)}`.execute(db);
    return;
  }
  // In slices: three bound values a tag, and SQLite takes at most 32,766 in one statement (a deleted target may have
  // had more than 10,922 tags, with tag-associations.create switched on).
  for (let i = 0; i < entries.length; i += COUNTS_PER_UPDATE) {
    const slice = entries.slice(i, i + COUNTS_PER_UPDATE);
    await adjustCountsQuery(db, { uuids: slice.map(([uuid]) => uuid), deltas: slice.map(([, d]) => d) });
  }
}

// SQLite's update of adjustTagCounts: each tag's count moves by the delta at its index.
const adjustCountsQuery = queryTemplate((db, { uuids, deltas }: { uuids: string[]; deltas: number[] }) => {
  const delta = sql.join(
    uuids.map((uuid, i) => sql`when ${uuid} then ${deltas[i]}`),
    sql` `,
  );
  return db
    .updateTable('tags')
    .set({ associations_count: sql`associations_count + (case uuid ${delta} end)` })
    .where('uuid', 'in', uuids);
});

/** Whitelist of the tag list: property name to trusted column (name compares through its normalized key). */
export const TAG_WHITELIST: Whitelist = {
  uuid: { column: 'uuid', type: 'uuid' },
  name: { column: 'name', type: 'string', keyColumn: 'name_key', normalize: normalizeTagName },
  tag_type: { column: 'tag_type', type: 'enum', values: TAG_TYPES },
  associations_count: { column: 'associations_count', type: 'integer' },
  created_at: { column: 'created_at', type: 'datetime' },
  updated_at: { column: 'updated_at', type: 'datetime' },
};

/** One page of the tags visible to `viewer` under the list query. */
export async function listTagRows(db: Db, lq: ListQuery, viewer: string | null): Promise<TagRow[]> {
  const q = applyFilters(db.selectFrom('tags').selectAll().where(tagVisibleTo(viewer, 'tags')), lq, 'uuid');
  return applyOrderAndWindow(q, lq, 'uuid', [{ column: 'created_at', direction: 'desc' }]).execute();
}

/** How many tags visible to `viewer` match the list query's filters (paging aside). */
export async function countTagRows(db: Db, lq: ListQuery, viewer: string | null): Promise<number> {
  const q = applyFilters(
    db
      .selectFrom('tags')
      .select((eb) => eb.fn.countAll().as('n'))
      .where(tagVisibleTo(viewer, 'tags')),
    lq,
    'uuid',
  );
  const row = await q.executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The expression of the UTC hour a time column falls in, as `YYYY-MM-DDTHH` on both engines. */
function hourOf(dialect: Dialect, column: string) {
  return dialect === 'postgres'
    ? sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24')`
    : sql<string>`substr(${sql.ref(column)}, 1, 13)`;
}

// Only uses on posts and comments a guest may see count towards trending: aggregate numbers must not leak private
// posts (the association visibility rule, for a guest: the audience copied from the target).
const PUBLIC_TARGET = sql<boolean>`(ta.target_type in ('post', 'comment') and ${targetVisibleTo(null)})`;

/** The hashtags used by the most distinct users since `since`, with their users and uses in the window. */
export async function findTrendingHashtags(db: Db, since: string, limit: number) {
  const rows = await db
    .selectFrom('tag_associations as ta')
    .innerJoin('tags as t', 't.uuid', 'ta.tag_uuid')
    .select([
      't.uuid',
      sql<number>`count(distinct ta.user_uuid)`.as('users'),
      sql<number>`count(*)`.as('uses'),
      sql<string>`min(t.name_key)`.as('key'),
    ])
    .where('t.tag_type', '=', 'hashtag')
    .where('ta.created_at', '>=', since)
    .where(PUBLIC_TARGET)
    .groupBy('t.uuid')
    .orderBy(sql`count(distinct ta.user_uuid)`, 'desc')
    .orderBy(sql`count(*)`, 'desc')
    .orderBy(sql`min(t.name_key)`, 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ uuid: r.uuid, users: Number(r.users), uses: Number(r.uses) }));
}

/** Uses per tag and UTC hour (`YYYY-MM-DDTHH`) since `since`, counting public content only. */
export async function findHourlyUses(db: Db, dialect: Dialect, tagUuids: string[], since: string) {
  if (tagUuids.length === 0) return [];
  const hour = hourOf(dialect, 'ta.created_at');
  const rows = await db
    .selectFrom('tag_associations as ta')
    .select(['ta.tag_uuid', hour.as('hour'), sql<number>`count(*)`.as('uses')])
    .where('ta.tag_uuid', 'in', tagUuids)
    .where('ta.created_at', '>=', since)
    .where(PUBLIC_TARGET)
    .groupBy(['ta.tag_uuid', hour])
    .execute();
  return rows.map((r) => ({ tag_uuid: r.tag_uuid, hour: r.hour, uses: Number(r.uses) }));
}

/** A tag whose stored associations_count differs from its associations (findTagCountMismatches). */
export interface TagCountMismatch {
  uuid: string;
  tag_type: string;
  name: string;
  stored: number;
  actual: number;
}

/** The tags whose associations_count differs from the number of their associations, at most `limit`, by uuid. */
export async function findTagCountMismatches(db: Db, limit: number): Promise<TagCountMismatch[]> {
  const rows = await db
    .selectFrom('tags as t')
    .leftJoin(
      (eb) =>
        eb
          .selectFrom('tag_associations')
          .select(['tag_uuid', (e) => e.fn.countAll<number | string>().as('n')])
          .groupBy('tag_uuid')
          .as('a'),
      (join) => join.onRef('a.tag_uuid', '=', 't.uuid'),
    )
    .select([
      't.uuid',
      't.tag_type',
      't.name',
      't.associations_count as stored',
      sql<number | string>`coalesce(a.n, 0)`.as('actual'),
    ])
    .where(sql<boolean>`t.associations_count <> coalesce(a.n, 0)`)
    .orderBy('t.uuid')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, stored: Number(r.stored), actual: Number(r.actual) }));
}
