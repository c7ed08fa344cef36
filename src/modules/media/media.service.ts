import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { constants, createWriteStream } from 'node:fs';
import { access, mkdir, open, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { fileTypeFromBuffer } from 'file-type';
import type { Selectable } from 'kysely';
import { ConfigError } from '../../config.ts';
import { type Context, locksRows } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { ApiError, invalidField, objectNotFound } from '../../http/errors.ts';
import { findUserRow } from '../user/user.service.ts';
import * as repo from './media.repository.ts';
import type { Media, UploadMediaInput } from './media.schemas.ts';
import type { MediaTable } from './media.table.ts';

/** Bytes file-type needs to recognise every format it knows. */
const SNIFF_BYTES = 4100;

/** A file received into MEDIA_DIR under a temporary name, not yet recorded. */
export interface ReceivedUpload {
  tempPath: string;
  storageKey: string;
  size: number;
  contentType: string;
}

/** Whether a detected content type is on the allow-list: images, video, audio and PDF. */
export function isAllowedContentType(mime: string): boolean {
  return /^(image|video|audio)\//.test(mime) || mime === 'application/pdf';
}

/** The folder media files are stored in, absolute. */
export function mediaDir(ctx: Context): string {
  return resolve(ctx.config.MEDIA_DIR);
}

/**
 * At start: MEDIA_DIR exists (created if missing) and this process can write to it. A folder it cannot write would
 * otherwise fail every upload with a 500; bad configuration stops the start instead, naming the variable.
 */
export async function checkMediaDir(ctx: Context): Promise<void> {
  const dir = mediaDir(ctx);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(
      `Invalid environment variable MEDIA_DIR: cannot write to the folder ${dir} (${reason})`,
    );
  }
}

function storagePath(ctx: Context, storageKey: string): string {
  return join(mediaDir(ctx), storageKey);
}

function tooLarge(ctx: Context): ApiError {
  return new ApiError(
    'payload_too_large',
    `The file is larger than ${ctx.config.MEDIA_MAX_BYTES} bytes, the most this server accepts (MEDIA_MAX_BYTES). Send a smaller file.`,
  );
}

/**
 * The 413 for an upload that would take the user's stored media past MEDIA_USER_MAX_BYTES; `partly` when `size` is
 * what arrived before the file was cut off, not its whole size.
 */
function overQuota(ctx: Context, used: number, size: number, partly = false): ApiError {
  const quota = ctx.config.MEDIA_USER_MAX_BYTES;
  const taken =
    used >= quota
      ? `You already store ${used} bytes of media, the most each user may (${quota}, MEDIA_USER_MAX_BYTES).`
      : `Your media would take ${partly ? 'at least ' : ''}${used + size} bytes, more than the ${quota} each user may store (MEDIA_USER_MAX_BYTES); you use ${used}.`;
  return new ApiError('payload_too_large', `${taken} Delete some media first.`);
}

/**
 * Refuses an upload that would take the user's stored media past MEDIA_USER_MAX_BYTES (0: no limit), so one account
 * cannot fill the disk every write needs. Read in the record's transaction: exact on SQLite, whose writes run one
 * at a time; on PostgreSQL uploads of one user committing at once may each pass, by at most their own sizes.
 */
async function refuseOverQuota(ctx: Context, db: Db, userUuid: string, size: number): Promise<void> {
  const quota = ctx.config.MEDIA_USER_MAX_BYTES;
  if (quota === 0) return;
  const used = await repo.sumMediaSizeOfUser(db, userUuid);
  if (used + size > quota) throw overQuota(ctx, used, size);
}

/**
 * The bytes the user may still store before the upload is received (Infinity without a quota), so a file past it is
 * cut off as it arrives instead of written whole to disk first; refuseOverQuota decides exactly at the record.
 */
async function quotaLeft(ctx: Context, userUuid: string): Promise<{ used: number; left: number }> {
  const quota = ctx.config.MEDIA_USER_MAX_BYTES;
  if (quota === 0) return { used: 0, left: Number.POSITIVE_INFINITY };
  const used = await repo.sumMediaSizeOfUser(ctx.db, userUuid);
  return { used, left: quota - used };
}

async function sniff(head: Buffer): Promise<string | ApiError> {
  const detected = await fileTypeFromBuffer(head);
  if (!detected || !isAllowedContentType(detected.mime)) {
    return new ApiError(
      'unsupported_media_type',
      `The file's content (${detected?.mime ?? 'not recognised'}) is not accepted; upload an image, video, audio file or PDF.`,
    );
  }
  return detected.mime;
}

/**
 * Streams an uploaded file into MEDIA_DIR under a temporary name, never holding it whole in memory: counts the
 * bytes (the stream is cut at MEDIA_MAX_BYTES and marked `truncated`, and nothing more is written once the bytes pass
 * what is left of the user's MEDIA_USER_MAX_BYTES) and sniffs the type from the first bytes.
 * On any failure the temporary file is removed and the rest of the stream is drained, then the error is thrown.
 */
export async function receiveUpload(
  ctx: Context,
  userUuid: string,
  stream: Readable & { truncated?: boolean },
): Promise<ReceivedUpload> {
  let quota: { used: number; left: number };
  try {
    quota = await quotaLeft(ctx, userUuid);
    if (quota.left <= 0) throw overQuota(ctx, quota.used, 0);
  } catch (err) {
    stream.resume();
    throw err;
  }
  try {
    // Readable by the service's own account only: private media must not be open to every account on the machine.
    await mkdir(mediaDir(ctx), { recursive: true, mode: 0o700 });
  } catch (err) {
    stream.resume();
    throw storageUnavailable(err as Error);
  }
  const storageKey = randomBytes(16).toString('hex');
  const tempPath = join(mediaDir(ctx), `.upload-${storageKey}.tmp`);
  const out = createWriteStream(tempPath, { flags: 'wx', mode: 0o600 });
  // A failed open or write of the file (disk full, folder removed) is kept here: an 'error' event without a listener
  // would end the process, and it may come while the loop waits for the client's next chunk.
  let diskError: Error | undefined;
  out.on('error', (err) => {
    diskError ??= err;
  });
  let size = 0;
  const head: Buffer[] = [];
  let headLength = 0;
  let contentType: string | undefined;
  let failure: ApiError | undefined;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      // After a failure the rest is read and dropped, so the request ends cleanly and nothing more is written.
      if (failure) continue;
      if (size > quota.left) {
        failure = overQuota(ctx, quota.used, size, true);
        continue;
      }
      if (contentType === undefined) {
        head.push(chunk);
        headLength += chunk.length;
        if (headLength >= SNIFF_BYTES) {
          const result = await sniff(Buffer.concat(head).subarray(0, SNIFF_BYTES));
          if (result instanceof ApiError) failure = result;
          else contentType = result;
        }
      }
      if (failure) continue;
      // Checked before each write: a write to the failed stream would wait for a 'drain' that never comes.
      if (diskError) throw diskError;
      if (!out.write(chunk)) await once(out, 'drain');
    }
    if (stream.truncated || size > ctx.config.MEDIA_MAX_BYTES) failure = tooLarge(ctx);
    if (!failure && size === 0) failure = invalidField('file', 'is empty; choose a file with content');
    if (!failure && contentType === undefined) {
      const result = await sniff(Buffer.concat(head));
      if (result instanceof ApiError) failure = result;
      else contentType = result;
    }
    out.end();
    await finished(out);
    if (failure) throw failure;
    // On disk before anyone hears of it: the record's COMMIT is flushed, and its file must be too.
    await flushToDisk(tempPath).catch((err: Error) => {
      diskError ??= err;
      throw err;
    });
    return { tempPath, storageKey, size, contentType: contentType as string };
  } catch (err) {
    out.destroy();
    stream.resume();
    await rm(tempPath, { force: true });
    // The file could not be stored: the storage's fault, answered as the database's own (SQLITE_FULL) is, a 503.
    if (diskError) throw storageUnavailable(diskError);
    throw err;
  }
}

function storageUnavailable(cause: Error): ApiError {
  const error = new ApiError(
    'unavailable',
    'The file could not be stored right now; retry in a moment.',
    undefined,
    {
      'retry-after': '1',
    },
  );
  error.cause = cause;
  return error;
}

/** Removes a received file that will not be recorded. */
export async function discardUpload(upload: ReceivedUpload): Promise<void> {
  await rm(upload.tempPath, { force: true });
}

/** Maps a media row to the API object. */
export function toMedia(row: Selectable<MediaTable>): Media {
  return {
    uuid: row.uuid,
    type: 'media',
    user_uuid: row.user_uuid,
    title: row.title,
    description: row.description,
    content_type: row.content_type,
    size: Number(row.size),
    visibility: row.visibility as Media['visibility'],
    language: row.language,
    created_at: row.created_at,
  };
}

/** Flushes a file's content, or a folder's entries, to stable storage. */
async function flushToDisk(path: string, folder = false): Promise<void> {
  const handle = await open(path, folder ? 'r' : 'r+');
  try {
    await (folder ? handle.sync() : handle.datasync());
  } finally {
    await handle.close();
  }
}

/**
 * Moves the (flushed) upload to its storage path and flushes the folder, so the name survives a power loss too;
 * done before the record's transaction, so no fsync waits inside it. A crash before the COMMIT leaves a file
 * without a record, which nothing serves.
 */
async function placeUpload(ctx: Context, tempPath: string, finalPath: string): Promise<void> {
  try {
    await rename(tempPath, finalPath);
    await flushToDisk(mediaDir(ctx), true);
  } catch (err) {
    await rm(finalPath, { force: true });
    throw storageUnavailable(err as Error);
  }
}

/**
 * Records a received upload: the file moved to its storage key, then the row and mediaCreated in one transaction.
 * If anything fails, neither the row nor the file remains; but once the transaction's work is done, a failure is its
 * COMMIT's, whose outcome may be unknown (the connection lost, the WAL flush failed after it): the file is kept then,
 * rather than risk a row without its file.
 */
export async function createMedia(
  ctx: Context,
  userUuid: string,
  upload: ReceivedUpload,
  input: UploadMediaInput,
): Promise<Media> {
  const finalPath = storagePath(ctx, upload.storageKey);
  try {
    await placeUpload(ctx, upload.tempPath, finalPath);
  } catch (err) {
    await rm(upload.tempPath, { force: true });
    throw err;
  }
  let workDone = false;
  try {
    return await ctx.db.transaction().execute(async (trx) => {
      workDone = false; // a retried transaction starts over
      await refuseOverQuota(ctx, trx, userUuid, upload.size);
      const owner = await findUserRow(trx, userUuid);
      const now = nowIso();
      const row = {
        uuid: uuidv7(),
        user_uuid: userUuid,
        title: input.title ?? null,
        description: input.description ?? null,
        content_type: upload.contentType,
        size: upload.size,
        visibility: input.visibility ?? 'public',
        language: input.language ?? owner?.language ?? 'en',
        storage_key: upload.storageKey,
        created_at: now,
        updated_at: now,
      };
      await repo.insertMedia(trx, row);
      await ctx.bus.emit(trx, {
        name: 'mediaCreated',
        actorUuid: userUuid,
        targetUuid: row.uuid,
        targetType: 'media',
      });
      workDone = true;
      return toMedia(row);
    });
  } catch (err) {
    // Thrown inside the transaction: rolled back for certain.
    if (!workDone) await rm(finalPath, { force: true });
    throw err;
  }
}

/** A media record the viewer may see, or 404 exactly as for a missing one. */
export async function getMedia(ctx: Context, uuid: string, viewer: string | null): Promise<Media> {
  const row = await repo.findVisibleMedia(ctx.db, uuid, viewer);
  if (!row) throw objectNotFound('media');
  return toMedia(row);
}

/** A file name safe in a Content-Disposition header: the title (or the uuid) in plain ASCII, plus an extension. */
export function safeFileName(row: Pick<Media, 'uuid' | 'title' | 'content_type'>): string {
  const base = (row.title ?? '')
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._ -]/g, '')
    .replace(/\s+/g, '_')
    .replace(/^[._-]+/, '')
    .slice(0, 100);
  const ext = (row.content_type.split('/')[1] ?? 'bin').replace(/[^a-z0-9]/gi, '').slice(0, 10) || 'bin';
  return `${base || `media-${row.uuid}`}.${ext}`;
}

/** The bytes of a visible media record, as a stream with what the response headers need; 404 otherwise. */
export async function openMediaFile(ctx: Context, uuid: string, viewer: string | null) {
  const row = await repo.findVisibleMedia(ctx.db, uuid, viewer);
  if (!row) throw objectNotFound('media');
  // Opened before anything is answered: a delete removing the file after this still lets these bytes be read, and one
  // that came first is the 404 of a missing file, where a stream opened later would fail after the headers (a 500).
  const handle = await open(storagePath(ctx, row.storage_key), 'r').catch(() => undefined);
  if (!handle) throw objectNotFound('media file');
  let size: number;
  try {
    size = (await handle.stat()).size;
  } catch (err) {
    await handle.close();
    throw err;
  }
  const media = toMedia(row);
  return {
    stream: handle.createReadStream(),
    contentType: media.content_type,
    size,
    fileName: safeFileName(media),
  };
}

/** The owner of a media record, or undefined when it does not exist (for the owner check). */
export async function mediaOwner(ctx: Context, uuid: string): Promise<string | undefined> {
  return (await repo.findMediaByUuid(ctx.db, uuid))?.user_uuid;
}

/** Deletes a media row inside `trx`, mediaDeleted first; the caller removes the file once committed. */
export async function deleteMediaInTrx(ctx: Context, trx: Db, row: Selectable<MediaTable>): Promise<void> {
  await ctx.bus.emit(trx, {
    name: 'mediaDeleted',
    actorUuid: row.user_uuid,
    targetUuid: row.uuid,
    targetType: 'media',
  });
  await repo.deleteMediaRow(trx, row.uuid);
}

/** Deletes a media record (the owner check ran before) and, after the commit, its file. */
export async function deleteMedia(ctx: Context, uuid: string): Promise<void> {
  const row = await ctx.db.transaction().execute(async (trx) => {
    // Locked (PostgreSQL), as a post's delete locks the post: an association committing meanwhile goes too.
    const found = await repo.findMediaByUuid(trx, uuid, locksRows(ctx));
    if (!found) throw objectNotFound('media');
    await deleteMediaInTrx(ctx, trx, found);
    return found;
  });
  // The record is gone for good: a file that cannot be removed now (a read-only disk) is left to `media sweep`,
  // rather than answer 500 for a deletion that happened.
  await rm(storagePath(ctx, row.storage_key), { force: true }).catch(() => undefined);
}

/**
 * Removes the files of media rows deleted inside a transaction this module does not commit (userDeleted): once a
 * row is gone for good the file goes; while it is still visible (uncommitted) it is checked again; a row still
 * there after a minute means the transaction rolled back, and its file stays. A file this misses (the deletion
 * committing after that minute, the process stopping meanwhile) is left to `media sweep` (media-sweep.service.ts).
 */
function removeFilesAfterCommit(ctx: Context, rows: { uuid: string; storage_key: string }[]): void {
  let pending = rows;
  let attempts = 0;
  const check = async () => {
    attempts++;
    try {
      const still = new Set(
        await repo.findExistingMediaUuids(
          ctx.db,
          pending.map((r) => r.uuid),
        ),
      );
      for (const r of pending)
        if (!still.has(r.uuid)) await rm(storagePath(ctx, r.storage_key), { force: true });
      pending = pending.filter((r) => still.has(r.uuid));
    } catch {
      return; // the database is closed (shutdown): the files are left to `media sweep`
    }
    if (pending.length > 0 && attempts < 60) setTimeout(check, 1000).unref();
  };
  setTimeout(check, 20).unref();
}

/** Subscribes the media module: a deleted user's media go with them (rows now, files after the commit). */
export function subscribeMedia(ctx: Context): void {
  ctx.bus.on(['userDeleted'], async (trx, event) => {
    const rows = await repo.findMediaOfUser(trx, event.targetUuid, locksRows(ctx));
    for (const row of rows) await deleteMediaInTrx(ctx, trx, row);
    if (rows.length > 0) removeFilesAfterCommit(ctx, rows);
  });
}
