import type { Kysely } from 'kysely';

/**
 * Tokens by client: disabling a client or rotating its secret revokes every token it issued (revokeClientTokens),
 * which read the whole tokens table without an index, inside the revoking transaction.
 */
export function tokenClientIndexMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.createIndex('tokens_client_id').on('tokens').column('client_id').execute();
    },
  };
}
