import { type Kysely, sql } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import type { Database, Dialect } from './database.ts';
import { coreMigration } from './migrations/0001-core.ts';
import { karmaSourceMigration } from './migrations/0002-karma-source.ts';
import { searchMigration } from './migrations/0002-search.ts';
import { searchFoldMigration } from './migrations/0003-search-fold.ts';
import { listIndexesMigration } from './migrations/0004-list-indexes.ts';
import { searchPlainWeightMigration } from './migrations/0005-search-plain-weight.ts';
import { tagAudienceMigration } from './migrations/0006-tag-audience.ts';
import { karmaNettingIndexMigration } from './migrations/0008-karma-netting-index.ts';
import { tagAudienceTriggerMigration } from './migrations/0009-tag-audience-trigger.ts';
import { writePathMigration } from './migrations/0010-write-path.ts';
import { searchMessagePartiesMigration } from './migrations/0011-search-message-parties.ts';
import { searchVocabMigration } from './migrations/0012-search-vocab.ts';
import { tagStandaloneMigration } from './migrations/0013-tag-standalone.ts';
import { searchKindGinMigration } from './migrations/0014-search-kind-gin.ts';
import { tagKeyFoldMigration } from './migrations/0015-tag-key-fold.ts';
import { tagCountsAtCommitMigration } from './migrations/0016-tag-counts-at-commit.ts';
import { associationColdReadsMigration } from './migrations/0017-association-cold-reads.ts';
import { searchScopeIndexMigration } from './migrations/0018-search-scope-index.ts';
import { connectionCoverMigration } from './migrations/0019-connection-cover.ts';
import { searchMessagePartyTokensMigration } from './migrations/0020-search-message-party-tokens.ts';
import { authVersionMigration } from './migrations/0021-auth-version.ts';
import { tagCountsOneRowAtATimeMigration } from './migrations/0022-tag-counts-one-row-at-a-time.ts';
import { karmaRuleMigration } from './migrations/0023-karma-rule.ts';
import { searchRecentIndexMigration } from './migrations/0024-search-recent-index.ts';
import { searchWordsMigration } from './migrations/0025-search-words.ts';
import { searchDeferredIndexMigration } from './migrations/0026-search-deferred-index.ts';
import { searchPrefixRangesMigration } from './migrations/0027-search-prefix-ranges.ts';
import { searchMessageWordsMigration } from './migrations/0028-search-message-words.ts';
import { searchFoldAsciiMigration } from './migrations/0029-search-fold-ascii.ts';
import { searchScopeTokensMigration } from './migrations/0030-search-scope-tokens.ts';
import { searchRestrictedIndexMigration } from './migrations/0031-search-restricted-index.ts';
import { searchRestrictedLanguageMigration } from './migrations/0032-search-restricted-language.ts';
import { searchWordStatisticsMigration } from './migrations/0033-search-word-statistics.ts';
import { searchNotMessagesIndexMigration } from './migrations/0034-search-not-messages-index.ts';
import { searchMediaGinMigration } from './migrations/0035-search-media-gin.ts';
import { associationUpdatedIndexMigration } from './migrations/0036-association-updated-index.ts';
import { tokenClientIndexMigration } from './migrations/0037-token-client-index.ts';
import { mediaStorageKeyIndexMigration } from './migrations/0038-media-storage-key-index.ts';

/** The ordered list of migrations for an engine. */
export function migrationsFor(dialect: Dialect): Record<string, Migration> {
  return {
    '0001-core': coreMigration(dialect),
    '0002-karma-source': karmaSourceMigration(),
    '0002-search': searchMigration(dialect),
    '0003-search-fold': searchFoldMigration(dialect),
    '0004-list-indexes': listIndexesMigration(dialect),
    '0005-search-plain-weight': searchPlainWeightMigration(dialect),
    '0006-tag-audience': tagAudienceMigration(dialect),
    '0008-karma-netting-index': karmaNettingIndexMigration(dialect),
    '0009-tag-audience-trigger': tagAudienceTriggerMigration(dialect),
    '0010-write-path': writePathMigration(dialect),
    '0011-search-message-parties': searchMessagePartiesMigration(dialect),
    '0012-search-vocab': searchVocabMigration(dialect),
    '0013-tag-standalone': tagStandaloneMigration(),
    '0014-search-kind-gin': searchKindGinMigration(dialect),
    '0015-tag-key-fold': tagKeyFoldMigration(),
    '0016-tag-counts-at-commit': tagCountsAtCommitMigration(dialect),
    '0017-association-cold-reads': associationColdReadsMigration(dialect),
    '0018-search-scope-index': searchScopeIndexMigration(dialect),
    '0019-connection-cover': connectionCoverMigration(dialect),
    '0020-search-message-party-tokens': searchMessagePartyTokensMigration(dialect),
    '0021-auth-version': authVersionMigration(dialect),
    '0022-tag-counts-one-row-at-a-time': tagCountsOneRowAtATimeMigration(dialect),
    '0023-karma-rule': karmaRuleMigration(dialect),
    '0024-search-recent-index': searchRecentIndexMigration(dialect),
    '0025-search-words': searchWordsMigration(dialect),
    '0026-search-deferred-index': searchDeferredIndexMigration(dialect),
    '0027-search-prefix-ranges': searchPrefixRangesMigration(dialect),
    '0028-search-message-words': searchMessageWordsMigration(dialect),
    '0029-search-fold-ascii': searchFoldAsciiMigration(dialect),
    '0030-search-scope-tokens': searchScopeTokensMigration(dialect),
    '0031-search-restricted-index': searchRestrictedIndexMigration(dialect),
    '0032-search-restricted-language': searchRestrictedLanguageMigration(dialect),
    '0033-search-word-statistics': searchWordStatisticsMigration(dialect),
    '0034-search-not-messages-index': searchNotMessagesIndexMigration(dialect),
    '0035-search-media-gin': searchMediaGinMigration(dialect),
    '0036-association-updated-index': associationUpdatedIndexMigration(dialect),
    '0037-token-client-index': tokenClientIndexMigration(),
    '0038-media-storage-key-index': mediaStorageKeyIndexMigration(),
  };
}

/**
 * Brings the schema up to date in one transaction on either engine (PostgreSQL's migrator lock, SQLite's BEGIN
 * IMMEDIATE: concurrent starts wait for each other); returns what ran.
 */
export async function migrateToLatest(db: Kysely<Database>, dialect: Dialect): Promise<string[]> {
  if (dialect !== 'postgres') return runMigrations(db, dialect);
  // A migration may build an index over, or rewrite, a whole table of a grown database (an early 0023 that filled its
  // column in ran for minutes): the time limit of requests does not apply. The connection gets it back afterwards;
  // a failure to reset it (a broken connection) must not hide the migration's own error.
  return db.connection().execute(async (conn) => {
    await refuseAsciiOnlyCtype(conn);
    await sql`SET statement_timeout = 0`.execute(conn);
    try {
      return await runMigrations(conn, dialect);
    } finally {
      await sql`RESET statement_timeout`.execute(conn).catch(() => undefined);
    }
  });
}

/**
 * Refuses a new PostgreSQL database whose character classes are C or POSIX: there `lower()` and `[:alnum:]` know
 * ASCII letters only, so the search index (search_fold) would drop every other letter while queries keep them, and
 * a search for "привет" would find nothing. The classes are ICU's for an ICU database and the builtin provider's
 * locale for a builtin one (PostgreSQL 17), libc's LC_CTYPE otherwise. A database already migrated is let through:
 * it was serving, and its locale changes only by a dump and restore (docs/deployment.md).
 */
async function refuseAsciiOnlyCtype(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{
    ctype: string;
    provider: string | null;
    builtin: string | null;
    used: boolean;
  }>`
    select d.datctype as ctype, to_jsonb(d) ->> 'datlocprovider' as provider, to_jsonb(d) ->> 'datlocale' as builtin,
      to_regclass('kysely_migration') is not null as used
    from pg_database d where d.datname = current_database()`.execute(db);
  const row = rows[0];
  if (!row || row.used || row.provider === 'i') return;
  const classes = row.provider === 'b' ? (row.builtin ?? '') : row.ctype;
  if (!['C', 'POSIX'].includes(classes)) return;
  throw new Error(
    `DATABASE_URL: the database's character classes are ${classes}, under which PostgreSQL treats only ASCII letters as letters, so searches in any other script would find nothing. Create it with a UTF-8 locale, e.g. CREATE DATABASE name TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' (docs/deployment.md).`,
  );
}

/**
 * Runs the pending ones of `migrations` (the engine's list by default) in one transaction; an error names the
 * migration that failed, and none of the run is kept.
 */
export async function runMigrations(
  db: Kysely<Database>,
  dialect: Dialect,
  migrations: Record<string, Migration> = migrationsFor(dialect),
): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  // Read first, without a lock: the migrator's transaction takes SQLite's write lock even with nothing to run, and
  // a start (or a CLI command) would then wait behind a long write, such as `search reindex`, for nothing.
  if ((await migrator.getMigrations()).every((m) => m.executedAt !== undefined)) return [];
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    const message = error instanceof Error ? error.message : String(error);
    const wrapped = new Error(
      failed
        ? `migration ${failed} failed (nothing of this run was kept): ${message}`
        : `migrating failed: ${message}`,
      { cause: error },
    );
    // The driver's code (SQLITE_BUSY, a PostgreSQL SQLSTATE) stays readable where errors are printed.
    Object.assign(wrapped, { code: (error as { code?: unknown }).code });
    throw wrapped;
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
