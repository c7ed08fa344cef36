// `media sweep` (docs/content.md, "Files without a record"): files in MEDIA_DIR that no media record names, which a
// deletion leaves when its files could not be removed after its commit, and uploads cut off by a crash.
import type { Dirent } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Context } from '../../context.ts';
import { findExistingStorageKeys, hasAnyMedia } from './media.repository.ts';
import { mediaDir } from './media.service.ts';

/** A stored file's name: its record's storage key (randomBytes(16), hex). */
const STORED_FILE = /^[0-9a-f]{32}$/;
/** An upload being received, or cut off by a crash (receiveUpload's temporary file). */
const UPLOAD_FILE = /^\.upload-[0-9a-f]{32}\.tmp$/;
/** Names asked about in one query. */
const BATCH = 500;

/** What a sweep removed. */
export interface SweepResult {
  /** Stored files no record names. */
  files: number;
  /** Temporary files of uploads. */
  uploads: number;
  /** Their bytes together. */
  bytes: number;
}

/**
 * Removes the files in MEDIA_DIR that no media record names and the temporary files of uploads, each only when
 * last written more than `olderThanMs` ago: an upload's file is placed before its record commits, so a younger file
 * may be one whose record is on its way. Other names are never touched.
 */
export async function sweepMediaFiles(ctx: Context, olderThanMs: number): Promise<SweepResult> {
  const dir = mediaDir(ctx);
  const before = Date.now() - olderThanMs;
  const result: SweepResult = { files: 0, uploads: 0, bytes: 0 };
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as Dirent[];
    throw err;
  });
  const old = async (name: string): Promise<number | undefined> => {
    const info = await stat(join(dir, name)).catch(() => undefined);
    return info && info.mtimeMs < before ? info.size : undefined;
  };
  const remove = async (name: string, size: number, kind: 'files' | 'uploads') => {
    await rm(join(dir, name), { force: true });
    result[kind]++;
    result.bytes += size;
  };
  const stored = entries.filter((e) => e.isFile() && STORED_FILE.test(e.name)).map((e) => e.name);
  // Stored files and no record at all: most likely another database than the API's (DATABASE_URL unset falls back
  // to a fresh embedded one), where every file would look orphaned. Nothing is removed then.
  if (stored.length > 0 && !(await hasAnyMedia(ctx.db))) {
    throw new Error(
      `MEDIA_DIR holds ${stored.length} stored files but this database has no media record: is DATABASE_URL the API's? Nothing was removed.`,
    );
  }
  for (let i = 0; i < stored.length; i += BATCH) {
    const batch = stored.slice(i, i + BATCH);
    const named = new Set(await findExistingStorageKeys(ctx.db, batch));
    for (const name of batch) {
      if (named.has(name)) continue;
      const size = await old(name);
      // Asked again after the age check: a record committed since the batch's query keeps its file.
      if (size !== undefined && (await findExistingStorageKeys(ctx.db, [name])).length === 0) {
        await remove(name, size, 'files');
      }
    }
  }
  for (const e of entries) {
    if (!e.isFile() || !UPLOAD_FILE.test(e.name)) continue;
    const size = await old(e.name);
    if (size !== undefined) await remove(e.name, size, 'uploads');
  }
  return result;
}
