import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * SQLite: deep pages and counts of `/tag-associations` that do not read rows from disk (docs/reliability.md,
 * "Resource limits, ninth session"). Once the machine has taken its page cache back, a page at offset 10,000 sorted
 * by `user_uuid` or `tag_uuid` read each skipped row's audience from the table, rows spread over the whole file: 1.0
 * s for 10,100 rows. The two sort indexes now end with `audience`: SQLite defers the table seek while the WHERE
 * clause reads columns the index has, so a public row (nine in ten) is judged from the index and the rest seek (80
 * ms signed in, 40 ms as a guest, from disk). The other sorts walk rows in about the order they were written, which
 * disk reads serve well. `tag_associations_rows` holds only `audience_other` (NULL but for messages and
 * connections): as the smallest index it is the one `count(*)` reads, 8 MB against the uuid index's 51 MB for
 * 1,044,792 associations, 70 ms from disk against 0.7 to 1 s. Together these cost no measurable `POST /posts`
 * throughput in three runs alternating with the earlier indexes; the whole audience triple in both cost about 15%.
 * PostgreSQL is left as it is: its deepest pages stayed under 500 ms after a server restart (same section).
 */
export function associationColdReadsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'sqlite') return;
      for (const column of ['user_uuid', 'tag_uuid']) {
        const name = `tag_associations_${column}`;
        await sql.raw(`DROP INDEX IF EXISTS ${name}`).execute(db);
        await sql.raw(`CREATE INDEX ${name} ON tag_associations (${column}, uuid, audience)`).execute(db);
      }
      await sql`CREATE INDEX IF NOT EXISTS tag_associations_rows ON tag_associations (audience_other)`.execute(
        db,
      );
      await sql`ANALYZE tag_associations`.execute(db);
    },
  };
}
