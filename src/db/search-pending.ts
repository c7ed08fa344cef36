// SQLite's deferred full-text indexing (migration 0026; docs/search.md, "Indexing at group commit"). FTS5 writes the
// terms it holds in memory to a new segment whenever a later statement of the transaction opens a statement journal
// (any insert with triggers, for one). Indexed row by row, a group of posts therefore wrote two segments per post
// (one per FTS5 table), and the merges they call for, on the write path. On the group-committed connection the
// triggers only note new documents in `search_pending`; the group indexes them all just before its COMMIT, so the
// group's terms reach the index as one segment per table.

/** The FTS5 tables fed from search_docs. */
export const SEARCH_FTS_TABLES = ['search_fts', 'search_fts_en'] as const;

/** The FTS5 `kind` column of a search_docs row: its kind, and for a message the tokens of its two parties. */
export function ftsKind(row: string): string {
  // A message always has both parties; coalesce keeps its kind token even if one were missing.
  const party = (column: string) => `coalesce(' u' || replace(${row}.${column}, '-', ''), '')`;
  return `CASE WHEN ${row}.kind = 'messages' THEN 'messages' || ${party('owner_uuid')} || ${party('recipient_uuid')} ELSE ${row}.kind END`;
}

/** The values (rowid, kind, title, body) a search_docs row is indexed with, as the triggers write them. */
export function ftsValues(row: string): string {
  return `${row}.id, ${ftsKind(row)}, search_fold(${row}.title), search_fold(${row}.body)`;
}

/**
 * The statements that index the noted documents and clear the notes, in order. They run inside the transaction that
 * wrote the documents, before its COMMIT (the group committer; rebuildIndex before it optimizes).
 */
export const FLUSH_PENDING_SEARCH_DOCS: readonly string[] = [
  ...SEARCH_FTS_TABLES.map(
    (table) =>
      `INSERT INTO ${table}(rowid, kind, title, body)
       SELECT ${ftsValues('d')} FROM search_pending p JOIN search_docs d ON d.id = p.id ORDER BY p.id`,
  ),
  'DELETE FROM search_pending',
];
