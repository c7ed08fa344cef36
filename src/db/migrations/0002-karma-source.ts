import type { Kysely } from 'kysely';

/**
 * Karma records remember the item that caused them (`source_uuid`: the post, comment, media, network, connection,
 * or the reaction's tag association), so deleting that item subtracts exactly what it granted, even after the
 * owner edited the record's target or when one post received many reactions.
 */
export function karmaSourceMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('karma').addColumn('source_uuid', 'text').execute();
      await db.schema
        .createIndex('karma_source_user')
        .on('karma')
        .columns(['source_uuid', 'user_uuid'])
        .execute();
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropIndex('karma_source_user').execute();
      await db.schema.alterTable('karma').dropColumn('source_uuid').execute();
    },
  };
}
