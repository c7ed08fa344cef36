import { type Context, heavyRead, readCacheScope } from '../../context.ts';
import type { Db, Dialect } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { type AnswerOptions, cachedRead } from '../../db/exact-cache.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { ApiError, invalidField, objectNotFound } from '../../http/errors.ts';
import { type ListQuery, parseListQuery } from '../../http/list-query.ts';
import { LIST_MAX_OFFSET } from '../../http/paging.ts';
import {
  deleteAssociationsOfTag,
  findNewestAssociationUuids,
} from '../tag-association/tag-association.repository.ts';
import { type FoundName, HAS_LETTER_OR_DIGIT, HASHTAG_MAX_LENGTH } from './extract.ts';
import { EMOTIONS, normalizeTagName, stripTagPrefix, type TagType } from './normalize.ts';
import {
  countTagRows,
  deleteTagRow,
  findHourlyUses,
  findTagByKey,
  findTagByUuid,
  findTagCountMismatches,
  findTagsByKeys,
  findTagsByUuids,
  findTrendingHashtags,
  insertTag,
  insertTagsIgnoringConflicts,
  listTagRows,
  TAG_WHITELIST,
  type TagCountMismatch,
  type TagRow,
  updateTagRow,
} from './tag.repository.ts';
import { findVisibleTag } from './tag-reads.service.ts';

/** Whitelist of the tag list's sortby and filterby, for the routes' query schema. */
export { TAG_WHITELIST } from './tag.repository.ts';

/** How many association uuids a tag object carries (the newest ones). */
export const ASSOCIATIONS_IN_TAG = 100;

/** A tag as the API returns it. */
export interface ApiTag {
  uuid: string;
  type: 'tag';
  name: string;
  tag_type: string;
  associations: string[];
  associations_count: number;
  created_at: string;
  updated_at: string;
}

function toApiTag(row: TagRow, associations: string[]): ApiTag {
  return {
    uuid: row.uuid,
    type: 'tag',
    name: row.name,
    tag_type: row.tag_type,
    associations,
    associations_count: Number(row.associations_count),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Maps tag rows to API tags; `associations` holds only associations whose target `viewer` may see. */
async function toApiTags(db: Db, dialect: Dialect, rows: TagRow[], viewer: string | null): Promise<ApiTag[]> {
  const newest = await findNewestAssociationUuids(
    db,
    dialect,
    rows.map((r) => r.uuid),
    ASSOCIATIONS_IN_TAG,
    viewer,
  );
  return rows.map((r) => toApiTag(r, newest.get(r.uuid) ?? []));
}

/** A tag just written in `trx`, as the API returns it to the writer. */
async function storedApiTag(trx: Db, dialect: Dialect, uuid: string, viewer: string | null): Promise<ApiTag> {
  return (await toApiTags(trx, dialect, [(await findTagByUuid(trx, uuid)) as TagRow], viewer))[0] as ApiTag;
}

/**
 * One tag by uuid, if visible to the viewer (an emotion, a tag made through tags.create, or one with an association on
 * something the viewer may see; otherwise 404 as if missing); its association uuids only those the viewer may see.
 * Returned rendered (`options.render`), from the exact read cache when nothing was committed since.
 */
export async function getTag<A>(
  ctx: Context,
  uuid: string,
  viewer: string | null,
  options: AnswerOptions<ApiTag, A>,
): Promise<A> {
  const key = uuid.toLowerCase();
  const read = async () => {
    const found = await findVisibleTag(ctx, key, viewer, ASSOCIATIONS_IN_TAG);
    // Wrapped: a missing tag (undefined) is an answer worth keeping too.
    return { answer: found ? options.render(toApiTag(found.row, found.associations)) : undefined };
  };
  const scope = readCacheScope(ctx, options.version);
  const { answer } = await cachedRead(scope, 'tag', JSON.stringify([key, viewer]), options.fresh, read);
  if (answer === undefined) throw objectNotFound('tag');
  return answer;
}

/** One page of the tag list with its paging echo. */
export interface TagPage {
  data: ApiTag[];
  count: { offset: number; limit: number; total: number };
}

/**
 * The tag list: paging, sortby, filterby, uuids over the tags visible to the viewer; count.total is the exact size
 * of that filtered set. Returned rendered (`options.render`), from the exact read cache when nothing was committed
 * since.
 */
export async function listTags<A>(
  ctx: Context,
  query: Record<string, unknown>,
  viewer: string | null,
  options: AnswerOptions<TagPage, A>,
): Promise<A> {
  const lq = parseListQuery(query, TAG_WHITELIST, LIST_MAX_OFFSET);
  const scope = readCacheScope(ctx, options.version);
  // The exact count is the costly part of a page (every tag's visibility), the same for every sort and page of
  // one filter: kept on its own, keyed by what it counts.
  const count = () =>
    cachedRead(
      scope,
      'tag-counts',
      JSON.stringify([lq.filters, lq.uuids ?? null, viewer]),
      options.fresh,
      () => countTagRows(ctx.readDb, lq, viewer),
    );
  const compute = async (gone: () => boolean) => {
    const page = await heavyRead(ctx, () => listTagPage(ctx, lq, viewer, count), gone);
    return { answer: options.render(page), weight: page.data.length + 1 };
  };
  const key = JSON.stringify([query, viewer]);
  const { answer } = await cachedRead(
    scope,
    'tags',
    key,
    options.fresh,
    compute,
    (v) => v.weight,
    options.abandoned,
  );
  return answer;
}

async function listTagPage(
  ctx: Context,
  lq: ListQuery,
  viewer: string | null,
  count: () => Promise<number>,
): Promise<TagPage> {
  const [rows, total] = await Promise.all([listTagRows(ctx.readDb, lq, viewer), count()]);
  return {
    data: await toApiTags(ctx.readDb, ctx.dialect, rows, viewer),
    count: { offset: lq.offset, limit: lq.limit, total },
  };
}

/**
 * Finds the tags of a type for some names, creating the missing ones with the given spelling. A concurrent writer
 * creating the same tag wins quietly (insert ... on conflict do nothing, then select).
 */
export async function ensureTags(trx: Db, tagType: TagType, names: FoundName[]): Promise<TagRow[]> {
  if (names.length === 0) return [];
  const found = await findTagsByKeys(
    trx,
    tagType,
    names.map((n) => n.key),
  );
  return (await createMissingTags(trx, tagType, names, found)) ?? found;
}

/**
 * Creates the tags of a type among `names` that `found` (the stored ones the caller read) lacks, as ensureTags
 * does; undefined when none is missing, else every tag of `names`, read again.
 */
export async function createMissingTags(
  trx: Db,
  tagType: TagType,
  names: FoundName[],
  found: { name_key: string }[],
): Promise<TagRow[] | undefined> {
  const have = new Set(found.map((t) => t.name_key));
  const missing = names.filter((n) => !have.has(n.key));
  if (missing.length === 0) return undefined;
  const now = nowIso();
  await insertTagsIgnoringConflicts(
    trx,
    missing.map((n) => ({
      uuid: uuidv7(),
      name: n.name,
      name_key: n.key,
      tag_type: tagType,
      associations_count: 0,
      created_at: now,
      updated_at: now,
    })),
  );
  return findTagsByKeys(
    trx,
    tagType,
    names.map((n) => n.key),
  );
}

/** The tag row of a configured emotion, created on first use. */
export async function ensureEmotionTag(trx: Db, emotion: string): Promise<TagRow> {
  const [tag] = await ensureTags(trx, 'emotion', [{ name: emotion, key: normalizeTagName(emotion) }]);
  if (!tag) throw new Error(`emotion tag ${emotion} could not be stored`);
  return tag;
}

/** Creates the tag rows of every configured emotion, so they can be listed before anyone reacts. */
export async function ensureEmotionTags(ctx: Context): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await ensureTags(
      trx,
      'emotion',
      EMOTIONS.map((e) => ({ name: e, key: normalizeTagName(e) })),
    );
  });
}

const NAME_CHARS = /^[\p{L}\p{N}\p{M}_]+$/u;

/** Checks a client-given name for a tag type and returns its display form and key; 400 when it cannot be one. */
function validName(raw: string, tagType: TagType): FoundName {
  const name = stripTagPrefix(raw).normalize('NFC');
  const length = [...name].length;
  if (length < 1 || length > HASHTAG_MAX_LENGTH) {
    throw invalidField('name', `give 1 to ${HASHTAG_MAX_LENGTH} characters (a leading # or @ is dropped)`);
  }
  if (!NAME_CHARS.test(name)) {
    throw invalidField('name', 'may hold letters, digits and _ of any script, without spaces or punctuation');
  }
  const key = normalizeTagName(name);
  // As extraction reads them; a mention is named after a username, which may be `___`.
  if (tagType === 'hashtag' && !HAS_LETTER_OR_DIGIT.test(name)) {
    throw invalidField('name', 'a hashtag needs at least one letter or digit');
  }
  if (tagType === 'hashtag' && /^\p{N}+$/u.test(name)) {
    throw invalidField('name', 'a hashtag may not be all digits; add a letter');
  }
  if (tagType === 'emotion' && !(EMOTIONS as readonly string[]).includes(key)) {
    throw invalidField('name', `an emotion is one of the configured set: ${EMOTIONS.join(', ')}`);
  }
  return { name: tagType === 'emotion' ? key : name, key };
}

/** 409 for a taken name; the holder's name and uuid only when `existing` is given (the caller may see it). */
function conflict(tagType: string, existing: TagRow | undefined): ApiError {
  const which = existing ? `: ${existing.name} (${existing.uuid}). Use it or choose another name.` : '.';
  return new ApiError(
    'conflict',
    `A ${tagType} tag with that name (ignoring case and accents) already exists${which}`,
  );
}

/** Creates a tag (switchable operation tags.create); 409 when the normalized name is taken for the type. */
export async function createTag(
  ctx: Context,
  input: { name: string; tag_type: TagType },
  viewer: string | null,
): Promise<ApiTag> {
  const { name, key } = validName(input.name, input.tag_type);
  return ctx.db.transaction().execute(async (trx) => {
    const now = nowIso();
    const uuid = uuidv7();
    const inserted = await insertTag(trx, {
      uuid,
      name,
      name_key: key,
      tag_type: input.tag_type,
      associations_count: 0,
      standalone: 1,
      created_at: now,
      updated_at: now,
    });
    if (inserted) return storedApiTag(trx, ctx.dialect, uuid, viewer);
    // A tag hidden from the caller (used only where they cannot see) is named by nobody's answer: the conflict says
    // the name is taken, as uniqueness must, but not which tag holds it. Publishing it instead (tried in the
    // sixty-fifth session) showed its associations_count, the total of its hidden uses, and let the caller watch it.
    const existing = await findTagByKey(trx, input.tag_type, key);
    const visible = existing && (await findTagByUuid(trx, existing.uuid, viewer));
    throw conflict(input.tag_type, visible || undefined);
  });
}

// Why the configured emotions cannot be deleted or retyped: their associations are reactions, each the source of the
// karma it gave an author, which removing them all at once would not take back (a new reaction would then pay again).
const EMOTION_TAGS_STAY = `the emotions are the configured set (${EMOTIONS.join(', ')}), and their associations are reactions that paid their authors karma; take reactions back one by one instead.`;

/**
 * Renames or retypes a tag (tags.update); its associations stay; 409 when another tag holds the new key. An emotion
 * tag keeps its type (400).
 */
export async function updateTag(
  ctx: Context,
  uuid: string,
  input: { name: string; tag_type: TagType },
  viewer: string | null,
): Promise<ApiTag> {
  const { name, key } = validName(input.name, input.tag_type);
  try {
    return await ctx.db.transaction().execute(async (trx) => {
      const row = await findTagByUuid(trx, uuid.toLowerCase());
      if (!row) throw objectNotFound('tag');
      if (row.tag_type === 'emotion' && input.tag_type !== 'emotion') {
        throw invalidField('tag_type', `an emotion tag stays an emotion: ${EMOTION_TAGS_STAY}`);
      }
      const clash = await findTagByKey(trx, input.tag_type, key);
      if (clash && clash.uuid !== row.uuid) throw conflict(input.tag_type, clash);
      const updated = await updateTagRow(trx, row.uuid, {
        name,
        name_key: key,
        tag_type: input.tag_type,
        updated_at: nowIso(),
      });
      // A delete committing since the read (PostgreSQL) leaves no row: the 404 of a missing tag, not a 500.
      if (!updated) throw objectNotFound('tag');
      return storedApiTag(trx, ctx.dialect, row.uuid, viewer);
    });
  } catch (err) {
    // On PostgreSQL a concurrent writer can take the key between the check and the update (read committed).
    if (!isUniqueViolation(err)) throw err;
    const winner = await findTagByKey(ctx.db, input.tag_type, key);
    if (!winner) throw err;
    throw conflict(input.tag_type, winner);
  }
}

/** Deletes a tag and every association of it (tags.delete); an emotion tag is never deleted (400). */
export async function deleteTag(ctx: Context, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await findTagByUuid(trx, uuid.toLowerCase());
    if (!row) throw objectNotFound('tag');
    if (row.tag_type === 'emotion') {
      throw new ApiError('invalid_request', `An emotion tag cannot be deleted: ${EMOTION_TAGS_STAY}`);
    }
    await deleteAssociationsOfTag(trx, row.uuid);
    await deleteTagRow(trx, row.uuid);
  });
}

/** A trending hashtag: the tag plus its distinct users, uses and uses per hour in the window. */
export interface TrendingTag extends ApiTag {
  users: number;
  uses: number;
  hours: { hour: string; uses: number }[];
}

const HOUR_MS = 3_600_000;

/**
 * Hashtags ranked by the distinct users who used them on public posts and comments in the last `window` clock
 * hours (the current, partial hour included), then by uses, then by normalized key; with uses per hour, oldest first.
 */
export async function trendingHashtags(
  ctx: Context,
  options: { window: number; limit: number },
  viewer: string | null,
  abandoned?: () => boolean,
): Promise<TrendingTag[]> {
  return heavyRead(ctx, () => readTrendingHashtags(ctx, options, viewer), abandoned);
}

async function readTrendingHashtags(
  ctx: Context,
  options: { window: number; limit: number },
  viewer: string | null,
): Promise<TrendingTag[]> {
  const currentHour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
  const startMs = currentHour - (options.window - 1) * HOUR_MS;
  const since = new Date(startMs).toISOString();
  const ranked = await findTrendingHashtags(ctx.readDb, since, options.limit);
  if (ranked.length === 0) return [];
  const uuids = ranked.map((r) => r.uuid);
  const hourly = await findHourlyUses(ctx.readDb, ctx.dialect, uuids, since);
  const byTagHour = new Map(hourly.map((h) => [`${h.tag_uuid}|${h.hour}`, h.uses]));
  const rows = await findTagsByUuids(ctx.readDb, uuids);
  const tags = new Map((await toApiTags(ctx.readDb, ctx.dialect, rows, viewer)).map((t) => [t.uuid, t]));
  const out: TrendingTag[] = [];
  for (const r of ranked) {
    const tag = tags.get(r.uuid);
    if (!tag) continue;
    const hours = [];
    for (let t = startMs; t <= currentHour; t += HOUR_MS) {
      const iso = new Date(t).toISOString();
      hours.push({ hour: iso, uses: byTagHour.get(`${r.uuid}|${iso.slice(0, 13)}`) ?? 0 });
    }
    out.push({ ...tag, users: r.users, uses: r.uses, hours });
  }
  return out;
}

/**
 * The `check` invariant of tag counts: every tag's associations_count equals its associations (the count every
 * association write adjusts in its transaction). Returns the offending tags, at most `limit`.
 */
export async function checkTagCounts(db: Db, limit: number): Promise<TagCountMismatch[]> {
  return findTagCountMismatches(db, limit);
}
