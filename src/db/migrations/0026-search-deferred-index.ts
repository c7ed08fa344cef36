import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';
import { ftsKind, ftsRowValues } from './0020-search-message-party-tokens.ts';
import { runStatementsAtomically } from './atomic-statements.ts';

/** The FTS5 tables fed from search_docs. */
export const SEARCH_FTS_TABLES = ['search_fts', 'search_fts_en'] as const;

/** The values (rowid, kind, title, body) a search_docs row is indexed with, as migration 0020's triggers wrote them. */
export function ftsValues(row: string): string {
  return ftsRowValues(row, ftsKind(row));
}

/**
 * SQLite: new documents may wait in `search_pending` to be indexed when their transaction commits (search-pending.ts;
 * docs/search.md, "Indexing at group commit"). FTS5 wrote each post of a group commit to a segment of its own: a
 * later statement of the transaction that opens a statement journal makes it write the terms it holds. The triggers
 * now note a new or changed document instead of indexing it when the connection says so (`search_defer()`, true on
 * a group-committed write connection while a group is open); otherwise they index at once, as before. A document
 * deleted or changed while noted was never indexed: nothing is removed from the index for it. PostgreSQL indexes a
 * row's tsvector in the row itself.
 */
export function searchDeferredIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await runStatementsAtomically(db, sqliteStatements());
    },
  };
}

function sqliteStatements(): string[] {
  return [
    'CREATE TABLE search_pending (id INTEGER PRIMARY KEY)',
    'DROP TRIGGER search_docs_ai',
    'DROP TRIGGER search_docs_ad',
    'DROP TRIGGER search_docs_au',
    ...deferredIndexTriggers(ftsValues, 'kind, owner_uuid, recipient_uuid, title, body'),
  ];
}

/**
 * The CREATE TRIGGER statements of search_docs that note a new or changed document (search_defer) or index it at
 * once with `values` (as ftsValues: rowid, kind, title, body of a row), and send FTS5 'delete' with the same values
 * for a document indexed before; the update trigger fires on `updateColumns`.
 */
export function deferredIndexTriggers(values: (row: string) => string, updateColumns: string): string[] {
  const noted = (row: string) => `EXISTS (SELECT 1 FROM search_pending WHERE id = ${row}.id)`;
  const note = `INSERT OR IGNORE INTO search_pending(id) SELECT new.id WHERE search_defer();`;
  const insert = (row: string) =>
    SEARCH_FTS_TABLES.map(
      (table) =>
        `INSERT INTO ${table}(rowid, kind, title, body) SELECT ${values(row)} WHERE NOT ${noted(row)};`,
    ).join(' ');
  const remove = (row: string) =>
    SEARCH_FTS_TABLES.map(
      (table) =>
        `INSERT INTO ${table}(${table}, rowid, kind, title, body) SELECT 'delete', ${values(row)} WHERE NOT ${noted(row)};`,
    ).join(' ');
  return [
    `CREATE TRIGGER search_docs_ai AFTER INSERT ON search_docs BEGIN ${note} ${insert('new')} END`,
    `CREATE TRIGGER search_docs_ad AFTER DELETE ON search_docs BEGIN
       ${remove('old')} DELETE FROM search_pending WHERE id = old.id;
     END`,
    // The old entries go unless the document was only noted; the new ones are noted, or indexed at once.
    `CREATE TRIGGER search_docs_au AFTER UPDATE OF ${updateColumns} ON search_docs BEGIN
       ${remove('old')} ${note} ${insert('new')}
     END`,
  ];
}
