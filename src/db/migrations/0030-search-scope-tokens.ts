import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';
import { ftsKind, ftsRowValues } from './0020-search-message-party-tokens.ts';
import { deferredIndexTriggers, SEARCH_FTS_TABLES } from './0026-search-deferred-index.ts';
import { runStatementsAtomically } from './atomic-statements.ts';

/** The FTS5 token of a document's visibility (`vpublic`, `vfriends`, `vprivate`), kept for posts, comments and media. */
export const VISIBILITY_TOKEN_PREFIX = 'v';
/** The FTS5 token of a content document's language (`len`, `lde`, ...), kept for posts, comments, media and messages. */
export const LANGUAGE_TOKEN_PREFIX = 'l';

/**
 * The FTS5 `kind` column of a search_docs row: migration 0020's (its kind; for a message the tokens of its two parties),
 * then for a post, comment or media item its visibility, and for every kind but users and networks its language. The
 * scope of a search is then a filter inside the index: a guest's walk skips friends-only and private documents, and
 * any walk limited to a language skips the others, without reading their rows (docs/search.md, "The scope inside the
 * full-text index (SQLite)"). A language is a supported code (two lower-case letters), one token.
 */
export function ftsScopedKind(row: string): string {
  const visibility = `CASE WHEN ${row}.kind IN ('post', 'comment', 'media') THEN ' ${VISIBILITY_TOKEN_PREFIX}' || ${row}.visibility ELSE '' END`;
  const language = `CASE WHEN ${row}.kind IN ('user', 'network') THEN '' ELSE coalesce(' ${LANGUAGE_TOKEN_PREFIX}' || ${row}.language, '') END`;
  return `${ftsKind(row)} || ${visibility} || ${language}`;
}

/** The values (rowid, kind, title, body) a search_docs row is indexed with since this migration. */
export function ftsScopedValues(row: string): string {
  return ftsRowValues(row, ftsScopedKind(row));
}

/**
 * SQLite: the scope tokens above in the `kind` column of both FTS5 tables. Every document is indexed again (the
 * tables emptied by FTS5's `delete-all`, then filled from search_docs in id order, 64 MiB of terms in memory at a
 * time, then merged into one segment), and the triggers of migration 0026 are made again with these values and also
 * fire when a document's visibility or language changes (a post made private takes its comments with it). About a
 * minute on the 1,000,000-post world, in one transaction. PostgreSQL checks the scope on each row it reads already.
 */
export function searchScopeTokensMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await runStatementsAtomically(db, sqliteStatements());
    },
  };
}

function sqliteStatements(): string[] {
  // FTS5's default, put back after the re-index as rebuildIndex does (search-index.repository.ts).
  const hashsize = (table: string, bytes: number) =>
    `INSERT INTO ${table}(${table}, rank) VALUES ('hashsize', ${bytes})`;
  return [
    'DROP TRIGGER search_docs_ai',
    'DROP TRIGGER search_docs_ad',
    'DROP TRIGGER search_docs_au',
    ...SEARCH_FTS_TABLES.flatMap((table) => [
      `INSERT INTO ${table}(${table}) VALUES ('delete-all')`,
      hashsize(table, 64 * 1024 * 1024),
      `INSERT INTO ${table}(rowid, kind, title, body) SELECT ${ftsScopedValues('d')} FROM search_docs d ORDER BY d.id`,
      `INSERT INTO ${table}(${table}) VALUES ('optimize')`,
      hashsize(table, 1024 * 1024),
    ]),
    // Every document is indexed now, noted ones included (none outside a group commit's transaction).
    'DELETE FROM search_pending',
    ...deferredIndexTriggers(
      ftsScopedValues,
      'kind, owner_uuid, recipient_uuid, visibility, language, title, body',
    ),
  ];
}
