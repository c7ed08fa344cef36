import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/** Kinds with few documents whose `/search/types` column may read a sparse word through a GIN index of their own. */
export const PREVIEW_GIN_KINDS = ['media'] as const;

/**
 * PostgreSQL: a GIN index of the media items' own. A world holds few of them (5,000 of 1,456,000 documents in the
 * seeded one), spread over every id, so the media column of `/search/types` walked all of them in id order for any
 * word they seldom hold: 5,000 heap pages, 5-7 ms alone and the costliest statement of the request under load, to
 * find the 17 items with `coffee`. Through this index those 17 cost 0.4-0.6 ms (docs/search.md, "Media through an
 * index of their own (PostgreSQL)"). A few hundred kB on that world; SQLite needs nothing: its walk filters kinds
 * inside the full-text index.
 */
export function searchMediaGinMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`CREATE INDEX IF NOT EXISTS search_docs_tsv_media ON search_docs USING gin (tsv) WHERE kind = 'media'`.execute(
        db,
      );
    },
  };
}
