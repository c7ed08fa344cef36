import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/** Tables of users, access, the social graph, content, karma and tags. */
export function coreMigration(dialect: Dialect) {
  const ts = dialect === 'postgres' ? 'timestamptz' : 'text';
  // Text that lists sort or compare on (the sortby/filterby whitelists): byte order on PostgreSQL too, whatever the
  // database's collation, so both engines order and compare alike (SQLite compares text as bytes; for UTF-8 that is
  // code-point order). uuid columns hold lower-case hex in one format, which sorts the same under any collation.
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : 'text';
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('users')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('username', sortText, (c) => c.notNull())
        .addColumn('username_key', sortText, (c) => c.notNull().unique())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('email_key', 'text', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('display_name', 'text')
        .addColumn('bio', 'text')
        .addColumn('language', 'text', (c) => c.notNull().defaultTo('en'))
        .addColumn('network_uuid', 'text')
        .addColumn('role', 'text', (c) => c.notNull().defaultTo('user'))
        .addColumn('karma', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('users_network_uuid').on('users').column('network_uuid').execute();
      await db.schema.createIndex('users_created_at').on('users').columns(['created_at', 'uuid']).execute();

      await db.schema
        .createTable('clients')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('first_party', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', ts, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('client_id', 'text', (c) => c.notNull().references('clients.id').onDelete('cascade'))
        .addColumn('user_uuid', 'text', (c) => c.references('users.uuid').onDelete('cascade'))
        .addColumn('family_id', 'text', (c) => c.notNull())
        .addColumn('expires_at', ts, (c) => c.notNull())
        .addColumn('used_at', ts)
        .addColumn('revoked_at', ts)
        .addColumn('created_at', ts, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tokens_family_id').on('tokens').column('family_id').execute();
      await db.schema.createIndex('tokens_user_uuid').on('tokens').column('user_uuid').execute();
      await db.schema.createIndex('tokens_expires_at').on('tokens').column('expires_at').execute();

      await db.schema
        .createTable('networks')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('payment_id', 'bigint')
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('networks_user_uuid').on('networks').column('user_uuid').execute();

      await db.schema
        .createTable('connections')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('target_user_uuid', 'text', (c) =>
          c.notNull().references('users.uuid').onDelete('cascade'),
        )
        .addColumn('pair_key', 'text', (c) => c.notNull().unique())
        .addColumn('status', sortText, (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('connections_user_uuid').on('connections').column('user_uuid').execute();
      await db.schema
        .createIndex('connections_target_user_uuid')
        .on('connections')
        .column('target_user_uuid')
        .execute();

      await db.schema
        .createTable('friends')
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('friend_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addPrimaryKeyConstraint('friends_pk', ['user_uuid', 'friend_uuid'])
        .execute();
      await db.schema.createIndex('friends_friend_uuid').on('friends').column('friend_uuid').execute();

      await db.schema
        .createTable('posts')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('visibility', 'text', (c) => c.notNull())
        .addColumn('language', 'text', (c) => c.notNull())
        .addColumn('network_uuid', 'text', (c) => c.references('networks.uuid').onDelete('set null'))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('posts_user_uuid')
        .on('posts')
        .columns(['user_uuid', 'created_at'])
        .execute();
      await db.schema.createIndex('posts_network_uuid').on('posts').column('network_uuid').execute();

      await db.schema
        .createTable('comments')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('post_uuid', 'text', (c) => c.notNull().references('posts.uuid').onDelete('cascade'))
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('language', 'text', (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('comments_post_uuid')
        .on('comments')
        .columns(['post_uuid', 'created_at'])
        .execute();
      await db.schema.createIndex('comments_user_uuid').on('comments').column('user_uuid').execute();

      await db.schema
        .createTable('media')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('title', 'text')
        .addColumn('description', 'text')
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('visibility', 'text', (c) => c.notNull())
        .addColumn('language', 'text', (c) => c.notNull())
        .addColumn('storage_key', 'text', (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('media_user_uuid').on('media').column('user_uuid').execute();

      await db.schema
        .createTable('messages')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('recipient_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('language', 'text', (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('messages_user_uuid')
        .on('messages')
        .columns(['user_uuid', 'created_at'])
        .execute();
      await db.schema
        .createIndex('messages_recipient_uuid')
        .on('messages')
        .columns(['recipient_uuid', 'created_at'])
        .execute();

      await db.schema
        .createTable('karma')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('event', sortText, (c) => c.notNull())
        .addColumn('target_uuid', 'text', (c) => c.notNull())
        .addColumn('target_type', sortText, (c) => c.notNull())
        .addColumn('karma_type', sortText, (c) => c.notNull())
        .addColumn('points', 'integer', (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('karma_user_created')
        .on('karma')
        .columns(['user_uuid', 'created_at'])
        .execute();
      await db.schema
        .createIndex('karma_user_event_created')
        .on('karma')
        .columns(['user_uuid', 'event', 'created_at'])
        .execute();
      await db.schema.createIndex('karma_target_uuid').on('karma').column('target_uuid').execute();

      await db.schema
        .createTable('tags')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('name', sortText, (c) => c.notNull())
        .addColumn('name_key', sortText, (c) => c.notNull())
        .addColumn('tag_type', sortText, (c) => c.notNull())
        .addColumn('associations_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .addUniqueConstraint('tags_type_key', ['tag_type', 'name_key'])
        .execute();
      await db.schema.createIndex('tags_name_key').on('tags').column('name_key').execute();

      await db.schema
        .createTable('tag_associations')
        .addColumn('uuid', 'text', (c) => c.primaryKey())
        .addColumn('tag_uuid', 'text', (c) => c.notNull().references('tags.uuid').onDelete('cascade'))
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
        .addColumn('target_uuid', 'text', (c) => c.notNull())
        .addColumn('target_type', sortText, (c) => c.notNull())
        .addColumn('language', 'text')
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .addUniqueConstraint('tag_associations_unique', ['tag_uuid', 'target_uuid', 'user_uuid'])
        .execute();
      await db.schema
        .createIndex('tag_associations_tag_created')
        .on('tag_associations')
        .columns(['tag_uuid', 'created_at'])
        .execute();
      await db.schema
        .createIndex('tag_associations_target')
        .on('tag_associations')
        .column('target_uuid')
        .execute();
      await db.schema
        .createIndex('tag_associations_created')
        .on('tag_associations')
        .columns(['created_at', 'uuid'])
        .execute();

      if (dialect === 'postgres') {
        // Case-insensitive `like` filters and trigram search use pg_trgm (0002 needs it too). Not caught: a failure
        // aborts the migration's transaction anyway, and its own message (no privilege, contrib not installed) is the
        // one to show.
        await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
      }
    },
  };
}
