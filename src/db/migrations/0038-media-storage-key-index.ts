import type { Kysely } from 'kysely';

/**
 * Media by storage key: `media sweep` asks which of the files in MEDIA_DIR still have a record, a few hundred names
 * at a time, which read the whole media table per batch without an index.
 */
export function mediaStorageKeyIndexMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.createIndex('media_storage_key').on('media').column('storage_key').execute();
    },
  };
}
