import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';
import { runStatementsAtomically } from './atomic-statements.ts';

/**
 * SQLite: a message's two parties as tokens of the FTS5 `kind` column (docs/search.md, "Messages in the full-text
 * index"). A signed-in search of messages kept the caller's by reading the row of every message that matched: about
 * 50,000 for a common word, to keep 1,187 (25 ms per word, 65 ms p99 for `/search/types` with the five commonest
 * words). With `u` + the party's uuid without dashes (partyToken in search.query.ts) beside `messages`, the index
 * itself intersects the words with the caller's messages. Other kinds keep their kind alone. The triggers now also
 * re-index a document whose parties change; the messages already indexed are re-indexed here (50,000 in a seeded
 * world: a few seconds). PostgreSQL walks a viewer's messages through its partial indexes (migration 0011).
 */
export function searchMessagePartyTokensMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await runStatementsAtomically(db, sqliteStatements());
    },
  };
}

/** The FTS5 `kind` column of a search_docs row: its kind, and for a message the tokens of its two parties. */
export function ftsKind(row: string): string {
  // A message always has both parties; coalesce keeps its kind token even if one were missing.
  const party = (column: string) => `coalesce(' u' || replace(${row}.${column}, '-', ''), '')`;
  return `CASE WHEN ${row}.kind = 'messages' THEN 'messages' || ${party('owner_uuid')} || ${party('recipient_uuid')} ELSE ${row}.kind END`;
}

/**
 * The values (rowid, kind, title, body) an FTS5 table of search_docs gets for a row, given its `kind` column, with the
 * title and body folded (search_fold). Each migration that changes what the kind column holds passes its own.
 */
export function ftsRowValues(row: string, kind: string): string {
  return `${row}.id, ${kind}, search_fold(${row}.title), search_fold(${row}.body)`;
}

function sqliteStatements(): string[] {
  const values = (row: string) => ftsRowValues(row, ftsKind(row));
  const insert = (table: string, row: string) =>
    `INSERT INTO ${table}(rowid, kind, title, body) VALUES (${values(row)});`;
  const remove = (table: string, row: string) =>
    `INSERT INTO ${table}(${table}, rowid, kind, title, body) VALUES ('delete', ${values(row)});`;
  // The entries of the messages as indexed before: the kind alone.
  const before = (table: string) =>
    `INSERT INTO ${table}(${table}, rowid, kind, title, body)
       SELECT 'delete', ${ftsRowValues('d', 'd.kind')} FROM search_docs d WHERE d.kind = 'messages'`;
  const after = (table: string) =>
    `INSERT INTO ${table}(rowid, kind, title, body)
       SELECT ${values('d')} FROM search_docs d WHERE d.kind = 'messages'`;
  return [
    'DROP TRIGGER search_docs_ai',
    'DROP TRIGGER search_docs_ad',
    'DROP TRIGGER search_docs_au',
    before('search_fts'),
    before('search_fts_en'),
    after('search_fts'),
    after('search_fts_en'),
    `CREATE TRIGGER search_docs_ai AFTER INSERT ON search_docs BEGIN
       ${insert('search_fts', 'new')} ${insert('search_fts_en', 'new')}
     END`,
    `CREATE TRIGGER search_docs_ad AFTER DELETE ON search_docs BEGIN
       ${remove('search_fts', 'old')} ${remove('search_fts_en', 'old')}
     END`,
    `CREATE TRIGGER search_docs_au AFTER UPDATE OF kind, owner_uuid, recipient_uuid, title, body ON search_docs BEGIN
       ${remove('search_fts', 'old')} ${remove('search_fts_en', 'old')}
       ${insert('search_fts', 'new')} ${insert('search_fts_en', 'new')}
     END`,
  ];
}
