// SQLite's deferred full-text indexing (migration 0026; docs/search.md, "Indexing at group commit"). FTS5 writes the
// terms it holds in memory to a new segment whenever a later statement of the transaction opens a statement journal
// (any insert with triggers, for one). Indexed row by row, a group of posts therefore wrote two segments per post
// (one per FTS5 table), and the merges they call for, on the write path. On the group-committed connection the
// triggers only note new documents in `search_pending`; the group indexes them all just before its COMMIT, so the
// group's terms reach the index as one segment per table. The flush writes the values the triggers write
// (ftsScopedValues, migration 0030). While documents are noted, FTS5 holds nothing for them: a statement that sends
// FTS5 'delete' or 'rebuild' from search_docs inside a group (as migration 0020's re-index did) must flush them first.

import { SEARCH_FTS_TABLES } from './migrations/0026-search-deferred-index.ts';
import { ftsScopedValues } from './migrations/0030-search-scope-tokens.ts';

/**
 * The statements that index the noted documents and clear the notes, in order. They run inside the transaction that
 * wrote the documents, before its COMMIT (the group committer; rebuildIndex before it optimizes).
 */
export const FLUSH_PENDING_SEARCH_DOCS: readonly string[] = [
  ...SEARCH_FTS_TABLES.map(
    (table) =>
      `INSERT INTO ${table}(rowid, kind, title, body)
       SELECT ${ftsScopedValues('d')} FROM search_pending p JOIN search_docs d ON d.id = p.id ORDER BY p.id`,
  ),
  'DELETE FROM search_pending',
];
