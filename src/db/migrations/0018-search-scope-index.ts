import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * SQLite: the scope of a search match read without its document row (docs/search.md, "Deep pages from disk"). A deep
 * page walks the matches newest first and checks each one's kind and visibility; from the table that is a random
 * read of a row carrying its whole text, backwards, which read-ahead does not serve. Once the machine has taken its
 * page cache back, `offset=9900` for a three-letter prefix took 0.73 s in the posts alone. This index holds only
 * (id, kind, visibility, language), 42 MB for 1,455,000 documents; a walk without text looks matches up in it
 * (INDEXED BY), a public match is judged there (its language too), and only the others and the page's rows read the
 * table: 0.22 s from disk. Cached, deep pages take about half the time they did. Its entries are appended in id
 * order, as the table's rows are. PostgreSQL is left as it is (docs/reliability.md).
 */
export function searchScopeIndexMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      await sql`CREATE INDEX IF NOT EXISTS search_docs_scope ON search_docs (id, kind, visibility, language)`.execute(
        db,
      );
      await sql`ANALYZE search_docs`.execute(db);
    },
  };
}
