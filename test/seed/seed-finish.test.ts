// `npm run seed` hands over a database as a running one would be after its load: statistics for the planner and, on
// PostgreSQL, every table vacuumed. Without the vacuum, until autovacuum comes (never, where it is off), a count the
// index could answer reads the heap instead: the top hashtag's association count took 48 ms through 13,205 heap
// blocks on the 1,000,000-post world, 1.5 ms from the index alone, and uncached association lists slowed to a crawl.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { seedDatabase } from '../../src/cli/seed/main.ts';
import { WORLD_DEFAULTS } from '../../src/cli/seed/world.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { testDialects } from '../helper.ts';

const pgDialect = testDialects().find((d) => d.name === 'postgres');

describe('a seeded PostgreSQL database is vacuumed [postgres]', { skip: !pgDialect }, () => {
  it('leaves every page of the seeded tables all-visible, so counts read the index alone', async () => {
    const { url, drop } = await (pgDialect as NonNullable<typeof pgDialect>).create();
    try {
      await seedDatabase(url, { ...WORLD_DEFAULTS, users: 30, posts: 200, seed: 7, batch: 64 });
      const handle = connectDatabase(url, { poolSize: 1 });
      try {
        const r = await sql<{ relname: string; relpages: number; relallvisible: number }>`
          select relname, relpages, relallvisible from pg_class
          where relname in ('tag_associations', 'karma', 'posts', 'search_docs') order by relname`.execute(
          handle.db,
        );
        assert.equal(r.rows.length, 4);
        for (const row of r.rows) {
          assert.ok(row.relpages > 0, `${row.relname} has pages`);
          assert.equal(row.relallvisible, row.relpages, `every page of ${row.relname} is all-visible`);
        }
      } finally {
        await handle.db.destroy();
      }
    } finally {
      await drop();
    }
  });
});
