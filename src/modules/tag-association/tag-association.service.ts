import { type Context, heavyRead, locksRows, readCacheScope } from '../../context.ts';
import type { Db, Dialect } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { type AnswerOptions, cachedRead } from '../../db/exact-cache.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import type { DomainEvent } from '../../events/bus.ts';
import { isOperationEnabled, operationDisabled } from '../../http/disabled.ts';
import { ApiError, invalidField, objectNotFound } from '../../http/errors.ts';
import { parseListQuery } from '../../http/list-query.ts';
import { LIST_MAX_OFFSET } from '../../http/paging.ts';
import { extractHashtags, extractMentions, type FoundName } from '../tag/extract.ts';
import { normalizeTagName } from '../tag/normalize.ts';
import {
  adjustTagCounts,
  associateStoredContentTagsPg,
  countDeltas,
  deleteUnusedMentionTagOf,
  findTagByKey,
  findTagByUuid,
  insertAssociationsCounted,
} from '../tag/tag.repository.ts';
import { createMissingTags, ensureEmotionTag, ensureTags } from '../tag/tag.service.ts';
import { findTarget, type TargetKind } from '../target/target.repository.ts';
import {
  ASSOCIATION_WHITELIST,
  type AudienceMismatch,
  audienceOfVisibility,
  type ContentText,
  contentTagKeys,
  countAssociationRows,
  deleteAssociationsByUuids,
  deleteAssociationsOfPostComments,
  deleteAssociationsOfTarget,
  deleteAssociationsOfUser,
  findAssociationByKey,
  findAssociationByUuid,
  findAudienceMismatches,
  findContentTags,
  findContentText,
  findExistingAssociationUuids,
  findExtractedAssociations,
  findReactionsByUser,
  findReactionUuidsOn,
  listAssociationRows,
  type MentionedUser,
  setTargetLanguage,
  type TagAssociationRow,
  updateAssociationRow,
} from './tag-association.repository.ts';

/** Whitelist of the association list's sortby and filterby, for the routes' query schema. */
export { ASSOCIATION_WHITELIST } from './tag-association.repository.ts';

/** Target kinds a client may associate a tag with. */
export const ASSOCIATION_TARGET_TYPES = ['post', 'comment', 'media', 'network', 'user', 'messages'] as const;

/** One of the target kinds a client may name. */
export type AssociationTargetType = (typeof ASSOCIATION_TARGET_TYPES)[number];

/** A tag association as the API returns it. */
export interface ApiTagAssociation {
  uuid: string;
  type: 'tag_association';
  tag_uuid: string;
  user_uuid: string;
  target_uuid: string;
  target_type: string;
  created_at: string;
  updated_at: string;
}

function toApi(row: TagAssociationRow): ApiTagAssociation {
  return {
    uuid: row.uuid,
    type: 'tag_association',
    tag_uuid: row.tag_uuid,
    user_uuid: row.user_uuid,
    target_uuid: row.target_uuid,
    target_type: row.target_type,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** One association whose target the viewer may see. */
export async function getAssociation(
  ctx: Context,
  uuid: string,
  viewer: string | null,
): Promise<ApiTagAssociation> {
  const row = await findAssociationByUuid(ctx.db, uuid.toLowerCase(), viewer);
  if (!row) throw objectNotFound('tag association');
  return toApi(row);
}

/** One page of the association list with its paging echo. */
export interface AssociationPage {
  data: ApiTagAssociation[];
  count: { offset: number; limit: number; total: number };
}

/**
 * The association list (targets visible to the viewer), optionally of one target language; exact count.total.
 * Returned rendered (`options.render`), from the exact read cache when nothing was committed since.
 */
export async function listAssociations<A>(
  ctx: Context,
  query: Record<string, unknown>,
  viewer: string | null,
  options: AnswerOptions<AssociationPage, A>,
): Promise<A> {
  const lq = parseListQuery(query, ASSOCIATION_WHITELIST, LIST_MAX_OFFSET);
  const language = typeof query.language === 'string' ? query.language : undefined;
  // Exact: reused only while nothing was committed since (src/db/exact-cache.ts).
  const scope = readCacheScope(ctx, options.version);
  // The exact count (a popular tag's ~100,000 uses) is the same for every sort and page of one filter: kept on its own.
  const countKey = JSON.stringify([lq.filters, lq.uuids ?? null, language ?? null, viewer]);
  const count = () =>
    cachedRead(scope, 'tag-association-counts', countKey, options.fresh, () =>
      countAssociationRows(ctx.readDb, ctx.dialect, lq, language, viewer),
    );
  const compute = async (gone: () => boolean) => {
    const [rows, total] = await heavyRead(
      ctx,
      () => Promise.all([listAssociationRows(ctx.readDb, ctx.dialect, lq, language, viewer), count()]),
      gone,
    );
    const page = { data: rows.map(toApi), count: { offset: lq.offset, limit: lq.limit, total } };
    return { answer: options.render(page), weight: page.data.length + 1 };
  };
  const key = JSON.stringify([query, viewer]);
  const { answer } = await cachedRead(
    scope,
    'tag-associations',
    key,
    options.fresh,
    compute,
    (v) => v.weight,
    options.abandoned,
  );
  return answer;
}

/**
 * The creator of an association, for the owner check; undefined when it does not exist or, `viewer` given, its target
 * is hidden from the viewer: its creator then gets the 404 of a missing one, as when reading it, and cannot learn
 * from a delete or an update that the hidden target still exists. Without `viewer` (an admin) visibility is not asked.
 */
export async function associationOwner(
  ctx: Context,
  uuid: string,
  viewer?: string | null,
): Promise<string | undefined> {
  return (await findAssociationByUuid(ctx.db, uuid.toLowerCase(), viewer))?.user_uuid;
}

async function visibleTarget(
  ctx: Context,
  trx: Db,
  kind: AssociationTargetType,
  uuid: string,
  viewer: string,
) {
  const target = await findTarget(trx, kind as TargetKind, uuid.toLowerCase(), viewer, locksRows(ctx));
  if (!target) throw objectNotFound(kind === 'messages' ? 'message' : kind);
  return target;
}

/** A tag the caller may see (tagVisibleTo); a hidden one is 404 as a missing one, so it can be neither found nor used. */
async function visibleTag(trx: Db, uuid: string, caller: string) {
  const tag = await findTagByUuid(trx, uuid.toLowerCase(), caller);
  if (!tag) throw objectNotFound('tag');
  return tag;
}

/**
 * Whether an association is a reaction: an emotion on a post or comment. Whichever route writes one, it grants and
 * takes back the content author's karma as POST /posts/{uuid}/emotions and its undo do (emotionCreated and
 * emotionDeleted), so deleting it through the generic route and reacting again cannot mint karma.
 */
function isReaction(tagType: string, targetType: string): targetType is ReactionKind {
  return tagType === 'emotion' && (targetType === 'post' || targetType === 'comment');
}

/** A reaction's association, as its events name it. */
type ReactionRow = { uuid: string; user_uuid: string; target_uuid: string; target_type: ReactionKind };

/** Emits a reaction's event; `author` is the content's author (null when the content is gone). */
async function emitReaction(
  ctx: Context,
  trx: Db,
  name: 'emotionCreated' | 'emotionDeleted',
  row: ReactionRow,
  emotion: string,
  author: string | null,
): Promise<void> {
  await ctx.bus.emit(trx, {
    name,
    actorUuid: row.user_uuid,
    targetUuid: row.target_uuid,
    targetType: row.target_type,
    data: { emotion, author_uuid: author, association_uuid: row.uuid },
  });
}

/** emotionDeleted for a reaction about to be removed: before the row goes, so subscribers can still read it. */
async function emitReactionDeleted(ctx: Context, trx: Db, row: ReactionRow, emotion: string): Promise<void> {
  const target = await findTarget(trx, row.target_type, row.target_uuid);
  await emitReaction(ctx, trx, 'emotionDeleted', row, emotion, target?.user_uuid ?? null);
}

/** The 409 of a second association of one tag, target and user, naming the existing one when it is known. */
function duplicate(existing?: TagAssociationRow): ApiError {
  const which = existing ? ` (association ${existing.uuid})` : '';
  return new ApiError('conflict', `That tag is already associated with that target by this user${which}.`);
}

/** Associates a tag with a target the caller may see, recorded as the caller's (tag-associations.create). */
export async function createAssociation(
  ctx: Context,
  caller: string,
  input: { tag_uuid: string; target_uuid: string; target_type: AssociationTargetType },
): Promise<ApiTagAssociation> {
  return ctx.db.transaction().execute(async (trx) => {
    const tag = await visibleTag(trx, input.tag_uuid, caller);
    const target = await visibleTarget(ctx, trx, input.target_type, input.target_uuid, caller);
    const existing = await findAssociationByKey(trx, tag.uuid, target.uuid, caller);
    if (existing) throw duplicate(existing);
    const now = nowIso();
    const row = {
      uuid: uuidv7(),
      tag_uuid: tag.uuid,
      user_uuid: caller,
      target_uuid: target.uuid,
      target_type: input.target_type,
      language: target.language,
      created_at: now,
      updated_at: now,
    };
    const added = await insertAssociationsCounted(trx, ctx.dialect, [row]);
    if (added.length === 0)
      throw duplicate((await findAssociationByKey(trx, tag.uuid, target.uuid, caller)) ?? row);
    if (isReaction(tag.tag_type, row.target_type)) {
      await emitReaction(
        ctx,
        trx,
        'emotionCreated',
        { ...row, target_type: row.target_type },
        tag.name_key,
        target.user_uuid,
      );
    }
    return toApi(row);
  });
}

/** Which of delete and update a POST /tag-associations/{uuid} asks for. */
export type AssociationWrite = 'delete' | 'update';

/**
 * Tells delete from update on POST /tag-associations/{uuid}: the X-HTTP-Method-Override header (DELETE or PATCH)
 * or the body's `_method` (delete or update). Neither, or the two disagreeing, is 400 ambiguous_operation.
 */
export function resolveAssociationWrite(
  override: string | string[] | undefined,
  method: string | undefined,
): AssociationWrite {
  let fromHeader: AssociationWrite | undefined;
  if (override !== undefined) {
    const v = (Array.isArray(override) ? override.join(',') : override).trim().toUpperCase();
    if (v === 'DELETE') fromHeader = 'delete';
    else if (v === 'PATCH') fromHeader = 'update';
    else throw invalidField('header x-http-method-override', 'must be DELETE or PATCH');
  }
  let fromBody: AssociationWrite | undefined;
  if (method !== undefined) {
    const v = method.trim().toLowerCase();
    if (v === 'delete') fromBody = 'delete';
    else if (v === 'update') fromBody = 'update';
    else throw invalidField('_method', 'must be delete or update');
  }
  if (fromHeader && fromBody && fromHeader !== fromBody) {
    throw new ApiError(
      'ambiguous_operation',
      'X-HTTP-Method-Override and _method disagree; send one of them, saying delete (DELETE) or update (PATCH).',
    );
  }
  const chosen = fromHeader ?? fromBody;
  if (!chosen) {
    throw new ApiError(
      'ambiguous_operation',
      'POST /tag-associations/{uuid} deletes or updates: say which with the header X-HTTP-Method-Override: DELETE or PATCH, or the body field _method=delete or _method=update (or use the DELETE or PATCH method).',
    );
  }
  return chosen;
}

/** Throws operation_disabled when the chosen association write is switched off. */
export function checkAssociationWriteEnabled(ctx: Context, write: AssociationWrite): void {
  const operation = write === 'delete' ? 'tag-associations.delete' : 'tag-associations.update';
  if (!isOperationEnabled(ctx.config.ENABLED_OPERATIONS, operation)) throw operationDisabled(operation);
}

/**
 * The association a delete or update acts on, or 404 when it is gone or its target is hidden from `seenBy`
 * (undefined: an admin, who moderates any). The owner check read the target's audience unlocked, before the
 * transaction: the target is key-shared first (PostgreSQL), which waits for an edit of it committing meanwhile, and
 * the association read after that wait, so an edit that hid the target answers 404, as after it. Target first is
 * the order a post's deletion takes (the post, a reaction's author for the karma, then the association): locking
 * the association first made a deadlock with it. `lock` also locks the association, for update.
 */
async function findAssociationToWrite(
  ctx: Context,
  trx: Db,
  uuid: string,
  seenBy: string | undefined,
  lock: boolean,
): Promise<TagAssociationRow> {
  const id = uuid.toLowerCase();
  // SQLite takes no row locks: its one writer at a time needs only the filtered read.
  if (locksRows(ctx)) {
    const found = await findAssociationByUuid(trx, id);
    if (!found) throw objectNotFound('tag association');
    await findTarget(trx, found.target_type as TargetKind, found.target_uuid, undefined, true);
  }
  const row = await findAssociationByUuid(trx, id, seenBy, lock && locksRows(ctx));
  if (!row) throw objectNotFound('tag association');
  return row;
}

/**
 * Deletes an association (tag-associations.delete; the creator-or-admin check ran before) whose target `seenBy` may
 * still see (undefined: an admin, who moderates any).
 */
export async function deleteAssociation(
  ctx: Context,
  uuid: string,
  seenBy: string | undefined,
): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await findAssociationToWrite(ctx, trx, uuid, seenBy, false);
    const tag = await findTagByUuid(trx, row.tag_uuid);
    if (tag && isReaction(tag.tag_type, row.target_type)) {
      await emitReactionDeleted(ctx, trx, { ...row, target_type: row.target_type }, tag.name_key);
    }
    const removed = await deleteAssociationsByUuids(trx, [uuid.toLowerCase()]);
    if (removed.length === 0) throw objectNotFound('tag association');
    await adjustTagCounts(trx, ctx.dialect, countDeltas([], removed));
  });
}

/**
 * Changes an association's tag or target (tag-associations.update); the new ones must exist and be visible to the
 * caller, and the current target to `seenBy` (undefined: an admin, who moderates any).
 */
export async function updateAssociation(
  ctx: Context,
  caller: string,
  uuid: string,
  input: { tag_uuid?: string; target_uuid?: string; target_type?: AssociationTargetType },
  seenBy: string | undefined,
): Promise<ApiTagAssociation> {
  if (input.tag_uuid === undefined && input.target_uuid === undefined && input.target_type === undefined) {
    throw invalidField('tag_uuid', 'give at least one of tag_uuid, target_uuid, target_type to update');
  }
  try {
    return await ctx.db
      .transaction()
      .execute((trx) => applyAssociationUpdate(ctx, trx, caller, uuid, input, seenBy));
  } catch (err) {
    // Two updates (or a create) reaching one tag, target and user at once: the unique key lets one in (a 500 before).
    if (isUniqueViolation(err)) throw duplicate();
    throw err;
  }
}

/** updateAssociation inside its transaction. */
async function applyAssociationUpdate(
  ctx: Context,
  trx: Db,
  caller: string,
  uuid: string,
  input: { tag_uuid?: string; target_uuid?: string; target_type?: AssociationTargetType },
  seenBy: string | undefined,
): Promise<ApiTagAssociation> {
  // Locked (PostgreSQL): two updates at once both read the old tag, and each moved its count (a count off by one on
  // each side); locked, the second reads the first's outcome.
  const row = await findAssociationToWrite(ctx, trx, uuid, seenBy, true);
  const oldTag = await findTagByUuid(trx, row.tag_uuid);
  const newTag = input.tag_uuid !== undefined ? await visibleTag(trx, input.tag_uuid, caller) : oldTag;
  const tagUuid = newTag?.uuid ?? row.tag_uuid;
  let targetUuid = row.target_uuid;
  let language = row.language;
  const targetType = input.target_type ?? (row.target_type as AssociationTargetType);
  if (input.target_uuid !== undefined || input.target_type !== undefined) {
    const target = await visibleTarget(ctx, trx, targetType, input.target_uuid ?? row.target_uuid, caller);
    targetUuid = target.uuid;
    language = target.language;
  }
  if (isReaction(oldTag?.tag_type ?? '', row.target_type) || isReaction(newTag?.tag_type ?? '', targetType)) {
    // A reaction's karma follows its emotion, target and author: moving it would leave them behind.
    throw new ApiError(
      'invalid_request',
      'A reaction (an emotion on a post or comment) cannot be changed: take it back and react again (POST /posts/{uuid}/emotions or /comments/{uuid}/emotions).',
      [{ field: 'tag_uuid', message: 'a reaction cannot be changed' }],
    );
  }
  const clash = await findAssociationByKey(trx, tagUuid, targetUuid, row.user_uuid);
  if (clash && clash.uuid !== row.uuid) throw duplicate(clash);
  const patch = {
    tag_uuid: tagUuid,
    target_uuid: targetUuid,
    target_type: targetType,
    language,
    updated_at: nowIso(),
  };
  await updateAssociationRow(trx, row.uuid, patch);
  if (tagUuid !== row.tag_uuid)
    await adjustTagCounts(trx, ctx.dialect, countDeltas([tagUuid], [row.tag_uuid]));
  return toApi({ ...row, ...patch });
}

/** Content a reaction can be attached to. */
export type ReactionKind = 'post' | 'comment';

/**
 * Reacts to a post or comment the caller may see with a configured emotion: one association per user, emotion
 * and target. Reacting again returns the existing association with created=false (the route answers 200, not 201).
 */
export async function react(
  ctx: Context,
  caller: string,
  kind: ReactionKind,
  targetUuid: string,
  emotion: string,
): Promise<{ association: ApiTagAssociation; created: boolean }> {
  return ctx.db.transaction().execute(async (trx) => {
    const target = await findTarget(trx, kind, targetUuid.toLowerCase(), caller, locksRows(ctx));
    if (!target) throw objectNotFound(kind);
    const tag = await ensureEmotionTag(trx, emotion);
    const existing = await findAssociationByKey(trx, tag.uuid, target.uuid, caller);
    if (existing) return { association: toApi(existing), created: false };
    const now = nowIso();
    const row = {
      uuid: uuidv7(),
      tag_uuid: tag.uuid,
      user_uuid: caller,
      target_uuid: target.uuid,
      target_type: kind,
      language: target.language,
      created_at: now,
      updated_at: now,
    };
    for (
      let attempt = 1;
      (await insertAssociationsCounted(trx, ctx.dialect, [row])).length === 0;
      attempt++
    ) {
      // A concurrent identical reaction won the race: answer with it.
      const won = await findAssociationByKey(trx, tag.uuid, target.uuid, caller);
      if (won) return { association: toApi(won), created: false };
      // It was taken back (PostgreSQL) between the insert that met it and this read: the key is free again, and
      // nothing may be paid for a row that was never stored, so the insert runs again.
      if (attempt === 3)
        throw new ApiError('conflict', 'The reaction changed while it was written; send it again.');
    }
    // Subscribers (karma) lock the author's row; PostgreSQL locks the tag's row only at commit (migration 0016).
    await emitReaction(ctx, trx, 'emotionCreated', row, tag.name_key, target.user_uuid);
    return { association: toApi(row), created: true };
  });
}

/**
 * Takes back the caller's reaction; 404 when the caller has no such reaction on that item, or may no longer see the
 * item (its author made it private, say): answered as for a missing item, so the reaction still stored there does not
 * tell them the item exists.
 */
export async function unreact(
  ctx: Context,
  caller: string,
  kind: ReactionKind,
  targetUuid: string,
  emotion: string,
): Promise<void> {
  // One answer for every refusal, whether the item is missing, hidden from the caller, or has no such reaction of
  // theirs (the reaction is the Owner's item: its refusals answer alike).
  const none = () => new ApiError('object_not_found', `You have no ${emotion} reaction on that ${kind}.`);
  await ctx.db.transaction().execute(async (trx) => {
    // Key-shared (PostgreSQL), as react does: a deletion or visibility edit of the item committing meanwhile is
    // waited for and checked again, so the answer is the one after it.
    if (!(await findTarget(trx, kind, targetUuid.toLowerCase(), caller, locksRows(ctx)))) throw none();
    const tag = await findTagByKey(trx, 'emotion', normalizeTagName(emotion));
    const row = tag ? await findAssociationByKey(trx, tag.uuid, targetUuid.toLowerCase(), caller) : undefined;
    if (!tag || !row || row.target_type !== kind) throw none();
    await emitReactionDeleted(ctx, trx, { ...row, target_type: kind }, tag.name_key);
    const removed = await deleteAssociationsByUuids(trx, [row.uuid]);
    await adjustTagCounts(trx, ctx.dialect, countDeltas([], removed));
  });
}

/**
 * Re-syncs the hashtags and mentions of a post or comment with its text, inside the writer's transaction: missing
 * tags are created, new associations (the author as user_uuid, the target's language and audience) added, vanished
 * ones removed. `text` is the content as just written when the writer has it (a new post), so it is not read back.
 * The tags' counts (+1 per added association, -1 per removed one) go with the insert (insertAssociationsCounted):
 * SQLite adds them right after it, PostgreSQL stages them in the insert's own statement and adds them at commit.
 */
export async function syncContentTags(
  trx: Db,
  dialect: Dialect,
  kind: ReactionKind,
  uuid: string,
  isNew: boolean,
  text?: ContentText,
): Promise<void> {
  const content = text ?? (await findContentText(trx, kind, uuid));
  if (!content) return;
  const found = extractHashtags(content.body);
  const names = extractMentions(content.body);
  // A new text without tags has nothing to sync: spare the writer's transaction the queries.
  if (isNew && found.length === 0 && names.length === 0) return;
  if (isNew && dialect === 'postgres') {
    await associateNewContentPg(trx, kind, uuid, content, found, names);
    return;
  }
  // Locked (PostgreSQL) against the deletion of a mentioned user, which removes the mentions of them: a mention
  // committed first goes with the rest, and a user the deletion already holds is left out, not waited for. Waiting
  // could deadlock: the writer may hold what the deletion needs next (the user's post it comments on, its own
  // user row for a grant, which the deletion's compensation of their connection takes).
  const stored = await findContentTags(
    trx,
    found.map((f) => f.key),
    names,
    locksRows({ dialect }),
  );
  const hashtags = (await createMissingTags(trx, 'hashtag', found, stored.hashtags)) ?? stored.hashtags;
  const mentions = await mentionTags(trx, stored.users);
  const wanted = new Set([...hashtags, ...mentions].map((t) => t.uuid));
  const current = isNew ? [] : await findExtractedAssociations(trx, kind, uuid, content.user_uuid);
  const have = new Set(current.map((a) => a.tag_uuid));
  const removed = await deleteAssociationsByUuids(
    trx,
    current.filter((a) => !wanted.has(a.tag_uuid)).map((a) => a.uuid),
  );
  const fields = associationFields(kind, uuid, content);
  await insertAssociationsCounted(
    trx,
    dialect,
    [...wanted]
      .filter((t) => !have.has(t))
      .map((tagUuid) => ({ uuid: uuidv7(), tag_uuid: tagUuid, ...fields })),
    removed,
  );
  if (!isNew) await setTargetLanguage(trx, kind, uuid, content.language);
}

/** What every association a text's extraction adds shares: all but its own uuid and tag. */
function associationFields(kind: ReactionKind, uuid: string, content: ContentText) {
  const now = nowIso();
  return {
    user_uuid: content.user_uuid,
    target_uuid: uuid,
    target_type: kind,
    language: content.language,
    // What the database's trigger would copy from the target; given here, the trigger has nothing to correct.
    audience: content.audience,
    audience_owner: content.audience_owner,
    audience_other: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * PostgreSQL, a new text's tags: the stored ones are looked up and associated in one round trip (each statement is
 * one, and a post's write is a few of them); only a tag that must be created first takes the steps syncContentTags
 * takes, after them. The rows and counts are those syncContentTags stores; the mentioned users are locked as it
 * locks them.
 */
async function associateNewContentPg(
  trx: Db,
  kind: ReactionKind,
  uuid: string,
  content: ContentText,
  found: FoundName[],
  names: string[],
): Promise<void> {
  const fields = associationFields(kind, uuid, content);
  const keys = contentTagKeys(
    found.map((f) => f.key),
    names,
  );
  const uuids = Array.from({ length: found.length + names.length }, () => uuidv7());
  const { stored, associated } = await associateStoredContentTagsPg(trx, keys, fields, uuids);
  const hashtags = (await createMissingTags(trx, 'hashtag', found, stored.hashtags)) ?? stored.hashtags;
  const mentions = await mentionTags(trx, stored.users);
  const done = new Set(associated);
  const rest = new Set([...hashtags, ...mentions].map((t) => t.uuid).filter((t) => !done.has(t)));
  await insertAssociationsCounted(
    trx,
    'postgres',
    [...rest].map((tagUuid) => ({ uuid: uuidv7(), tag_uuid: tagUuid, ...fields })),
  );
}

/**
 * The mention tags of some mentioned users (findContentTags; unknown users are no mention), created where missing.
 * Only a missing tag (or a key that is not the username key) takes the tag store's own lookup and insert.
 */
async function mentionTags(trx: Db, users: MentionedUser[]): Promise<{ uuid: string }[]> {
  const out: { uuid: string }[] = [];
  const missing: FoundName[] = [];
  for (const user of users) {
    const key = normalizeTagName(user.username);
    if (user.tag && user.tag.name_key === key) out.push(user.tag);
    else missing.push({ name: user.username, key });
  }
  if (missing.length > 0) out.push(...(await ensureTags(trx, 'mention', missing)));
  return out;
}

/** The text of a new post as its postCreated event carries it (undefined for an event without it). */
export function postTextOf(event: DomainEvent): ContentText | undefined {
  const body = event.data?.body;
  const language = event.data?.language;
  const visibility = event.data?.visibility;
  if (typeof body !== 'string' || typeof language !== 'string' || typeof visibility !== 'string')
    return undefined;
  return {
    body,
    language,
    user_uuid: event.actorUuid,
    audience: audienceOfVisibility(visibility),
    audience_owner: event.actorUuid,
  };
}

/** The uuids of the reactions on a post or comment (each the source of the karma it gave its author). */
export async function reactionsOn(trx: Db, kind: ReactionKind, uuid: string): Promise<string[]> {
  return findReactionUuidsOn(trx, kind, uuid);
}

/** Which of these associations (reactions, say) still exist. */
export async function existingAssociations(trx: Db, uuids: string[]): Promise<string[]> {
  return findExistingAssociationUuids(trx, uuids);
}

/** The reactions a user made (each the source of the karma it gave an author), with what each is on. */
export async function reactionsBy(
  trx: Db,
  userUuid: string,
): Promise<{ uuid: string; target_uuid: string; target_type: string }[]> {
  return findReactionsByUser(trx, userUuid);
}

/** Removes every association of a deleted item (and, for a post, of its comments). */
export async function removeTargetTags(
  trx: Db,
  dialect: Dialect,
  kind: TargetKind,
  uuid: string,
): Promise<void> {
  const removed = await deleteAssociationsOfTarget(trx, kind, uuid);
  if (kind === 'post') removed.push(...(await deleteAssociationsOfPostComments(trx, uuid)));
  await adjustTagCounts(trx, dialect, countDeltas([], removed));
}

/** Copies a target's new language onto its associations (a user's edit; posts and comments re-sync their own). */
export async function followTargetLanguage(
  trx: Db,
  targetType: 'user',
  targetUuid: string,
  language: string | number | null | undefined,
): Promise<void> {
  if (typeof language === 'string') await setTargetLanguage(trx, targetType, targetUuid, language);
}

/**
 * Removes the associations a deleted user made, those on everything that goes with the user, and the mentions of
 * the user in others' content: the name may be registered again, by someone else.
 */
export async function removeUserTags(trx: Db, dialect: Dialect, userUuid: string): Promise<void> {
  await adjustTagCounts(trx, dialect, countDeltas([], await deleteAssociationsOfUser(trx, userUuid)));
  await deleteUnusedMentionTagOf(trx, userUuid);
}

/**
 * The `check` invariant of tag association visibility: every association's copied audience (audience,
 * audience_owner, audience_other) equals what its target gives now. Returns the offending rows, at most `limit`.
 */
export async function checkAssociationAudiences(db: Db, limit: number): Promise<AudienceMismatch[]> {
  return findAudienceMismatches(db, limit);
}
