// `npm run seed` hands over a database as a running one would be after its load: statistics for the planner and, on
// PostgreSQL, every table vacuumed. Without the vacuum, until autovacuum comes (never, where it is off), a count the
// index could answer reads the heap instead: the top hashtag's association count took 48 ms through 13,205 heap
// blocks on the 1,000,000-post world, 1.5 ms from the index alone, and uncached association lists slowed to a crawl.
//
// What is checked is that property: a count through an index reads no heap row. Comparing pg_class.relallvisible with
// relpages is not the same check: a table extended several blocks at once while other sessions write (as the test
// suite's other files do) keeps never-used all-zero pages, which PostgreSQL 15's VACUUM leaves out of the visibility
// map. They hold no row, so no count reads them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { seedDatabase } from '../../src/cli/seed/main.ts';
import { WORLD_DEFAULTS } from '../../src/cli/seed/world.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { testDialects } from '../helper.ts';

const pgDialect = testDialects().find((d) => d.name === 'postgres');
const TABLES = ['tag_associations', 'karma', 'posts', 'search_docs'] as const;

/** Every node of an EXPLAIN (FORMAT JSON) plan tree. */
function planNodes(node: Record<string, unknown>): Record<string, unknown>[] {
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [node, ...children.flatMap(planNodes)];
}

describe('a seeded PostgreSQL database is vacuumed [postgres]', { skip: !pgDialect }, () => {
  it('lets a count of every seeded table read its index alone, no heap row', async () => {
    const { url, drop } = await (pgDialect as NonNullable<typeof pgDialect>).create();
    try {
      await seedDatabase(url, { ...WORLD_DEFAULTS, users: 30, posts: 200, seed: 7, batch: 64 });
      const handle = connectDatabase(url, { poolSize: 1 });
      try {
        await handle.db.connection().execute(async (c) => {
          // The tables are small: without these, a sequential scan wins and no index is read.
          await sql`set enable_seqscan = off`.execute(c);
          await sql`set enable_bitmapscan = off`.execute(c);
          for (const table of TABLES) {
            const r = await sql<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>`
              explain (analyze, format json) select count(*) from ${sql.table(table)}`.execute(c);
            const plan = r.rows[0]?.['QUERY PLAN'][0].Plan as Record<string, unknown>;
            const scans = planNodes(plan).filter((n) => n['Node Type'] === 'Index Only Scan');
            assert.equal(scans.length, 1, `${table}: ${JSON.stringify(plan)}`);
            assert.ok(Number(scans[0]?.['Actual Rows']) > 0, `${table} has rows`);
            assert.equal(scans[0]?.['Heap Fetches'], 0, `${table}: the count read heap rows`);
          }
        });
      } finally {
        await handle.db.destroy();
      }
    } finally {
      await drop();
    }
  });
});
