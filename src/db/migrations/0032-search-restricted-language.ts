import type { Kysely } from 'kysely';
import type { Dialect } from '../database.ts';
import { restrictedVisibility } from './0031-search-restricted-index.ts';
import { runStatementsAtomically } from './atomic-statements.ts';

/**
 * SQLite: the index of friends-only and private documents (migration 0031) with their language as a fourth column,
 * (id, visibility, owner_uuid, language), so a signed-in caller's deep page with `language` checks it there, beside
 * the owner. In the full-text filter the language token (migration 0030) had to be intersected with the words, and
 * its doclist holds most of the index: the check of bench_user's English deep pages took 6.5 ms a statement with the
 * token, 3.9 ms with the language read from this index (docs/search.md, "Signed-in deep pages (SQLite)"). Built again
 * under the same name in one transaction, so another process reading the file never finds it missing (the migrator's
 * own, or one of its own for a caller outside one): about a second and 12 MB on the 1,000,000-post world. PostgreSQL has neither
 * index and is left as it is.
 */
export function searchRestrictedLanguageMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await runStatementsAtomically(db, [
        'DROP INDEX IF EXISTS search_docs_restricted',
        `CREATE INDEX search_docs_restricted ON search_docs (id, visibility, owner_uuid, language)
          WHERE ${restrictedVisibility()}`,
        'ANALYZE search_docs_restricted',
      ]);
    },
  };
}
