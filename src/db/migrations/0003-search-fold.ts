import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';
import { foldStepsForPostgres } from '../search-fold.ts';

/**
 * One folding of indexed text on both engines (src/db/search-fold.ts). SQLite's FTS5 tokenizer folds case and
 * diacritics but knows no NFKC or ß, and PostgreSQL's German stemmer maps ß to ss: the same query found different
 * items per engine (`straße`, `ﬁnance`, `ΟΔΟΣ`). Now SQLite's full-text and trigram tables index
 * search_fold(text) (the JavaScript function registered on every connection), and PostgreSQL's search_fold() does the
 * same steps; the existing index is rebuilt with it.
 */
export function searchFoldMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const statements = dialect === 'postgres' ? postgresStatements() : sqliteStatements();
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}

function sqliteStatements(): string[] {
  const values = (row: string) =>
    `${row}.id, ${row}.kind, search_fold(${row}.title), search_fold(${row}.body)`;
  const insert = (table: string, row: string) =>
    `INSERT INTO ${table}(rowid, kind, title, body) VALUES (${values(row)});`;
  const remove = (table: string, row: string) =>
    `INSERT INTO ${table}(${table}, rowid, kind, title, body) VALUES ('delete', ${values(row)});`;
  return [
    'DROP TRIGGER search_docs_ai',
    'DROP TRIGGER search_docs_ad',
    'DROP TRIGGER search_docs_au',
    'DROP TRIGGER search_names_ai',
    'DROP TRIGGER search_names_ad',
    `CREATE TRIGGER search_docs_ai AFTER INSERT ON search_docs BEGIN
       ${insert('search_fts', 'new')} ${insert('search_fts_en', 'new')}
     END`,
    `CREATE TRIGGER search_docs_ad AFTER DELETE ON search_docs BEGIN
       ${remove('search_fts', 'old')} ${remove('search_fts_en', 'old')}
     END`,
    `CREATE TRIGGER search_docs_au AFTER UPDATE OF kind, title, body ON search_docs BEGIN
       ${remove('search_fts', 'old')} ${remove('search_fts_en', 'old')}
       ${insert('search_fts', 'new')} ${insert('search_fts_en', 'new')}
     END`,
    `CREATE TRIGGER search_names_ai AFTER INSERT ON search_names BEGIN
       INSERT INTO search_names_tri(rowid, name_fold) VALUES (new.id, search_fold(new.name_fold));
     END`,
    `CREATE TRIGGER search_names_ad AFTER DELETE ON search_names BEGIN
       INSERT INTO search_names_tri(search_names_tri, rowid, name_fold) VALUES ('delete', old.id, search_fold(old.name_fold));
     END`,
    // The index holds folded text now, unlike the external content: rebuild it from scratch with the folding.
    `INSERT INTO search_fts(search_fts) VALUES ('delete-all')`,
    `INSERT INTO search_fts_en(search_fts_en) VALUES ('delete-all')`,
    `INSERT INTO search_names_tri(search_names_tri) VALUES ('delete-all')`,
    `INSERT INTO search_fts(rowid, kind, title, body) SELECT ${values('d')} FROM search_docs d`,
    `INSERT INTO search_fts_en(rowid, kind, title, body) SELECT ${values('d')} FROM search_docs d`,
    `INSERT INTO search_names_tri(rowid, name_fold) SELECT n.id, search_fold(n.name_fold) FROM search_names n`,
  ];
}

function postgresStatements(): string[] {
  return [
    // The steps of foldText, then every run of non-alphanumerics made a blank (as foldForIndex).
    `CREATE OR REPLACE FUNCTION search_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
       SELECT ${foldStepsForPostgres()}
     $fn$`,
    // Re-fold what is indexed: the BEFORE UPDATE OF title trigger recomputes each document's tsvector.
    'UPDATE search_docs SET title = title',
    `UPDATE search_names SET name_fold = ' ' || search_fold(name) || ' '`,
  ];
}
