import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { reindex } from '../../src/modules/search/search.service.ts';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';
import { fts5RowsIndexed, fts5Structure } from './fts5-structure.ts';
import { buildWorld, call, type World } from './world.ts';

// docs/search.md, "Keeping the index compact": a rebuild leaves each FTS5 table as one segment on a level the API's
// commits never climb to, so no COMMIT merges the whole index again (a stall of seconds on the event loop).
// PostgreSQL has no FTS5 tables.

const FTS_TABLES = ['search_fts', 'search_fts_en', 'search_names_tri'] as const;

for (const dialect of testDialects().filter((d) => d.name === 'sqlite')) {
  describe(`search: the index a rebuild leaves [${dialect.name}]`, () => {
    let t: TestApp;
    let w: World;

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      w = await buildWorld(t);
      // Posts of distinct words written straight to the table, which the rebuilds index: a rebuilt segment of many
      // pages, larger than the commits' own (FTS5 moves a higher segment down to a new one's level when it is no
      // larger, and the commits' merges would then take it in).
      await t.ctx.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 3000; i++) {
          const now = nowIso();
          await trx
            .insertInto('posts')
            .values({
              uuid: uuidv7(),
              user_uuid: w.alice.uuid,
              body: `bulk${i} filler${i * 7} word${i * 13}`,
              visibility: 'public',
              language: 'en',
              network_uuid: null,
              created_at: now,
              updated_at: now,
            })
            .execute();
        }
      });
    });
    after(async () => t?.close());

    it('is one segment per FTS5 table, high above the commits, without its placeholders', async () => {
      const { docs, names } = await reindex(t.ctx);
      for (const table of FTS_TABLES) {
        const { segments } = await fts5Structure(t, table);
        assert.equal(segments.length, 1, `${table}: ${JSON.stringify(segments)}`);
        assert.equal(segments[0]?.level, 21, `${table}: ${JSON.stringify(segments)}`);
        // The placeholders' words and rows are gone, and FTS5's own totals count the documents alone.
        const { rows } = await sql<{ words: number; rows: number }>`select
            (select count(*) from ${sql.table(table)} where ${sql.table(table)} match 'lift*') as words,
            (select count(*) from ${sql.table(`${table}_docsize`)} where id < 0) as rows`.execute(t.ctx.db);
        assert.deepEqual({ ...rows[0] }, { words: 0, rows: 0 }, table);
        assert.equal(await fts5RowsIndexed(t, table), table === 'search_names_tri' ? names : docs, table);
        // rank 0: FTS5's own structures only (its text is folded, the content table's is not).
        await sql`insert into ${sql.table(table)}(${sql.ref(table)}, rank) values ('integrity-check', 0)`.execute(
          t.ctx.db,
        );
      }
      // The world's words and the bulk posts' are found as before the rebuild.
      assert.ok((await call(t, 'GET', '/search?query=zebra&limit=100', t.guest)).length > 0);
      assert.equal((await call(t, 'GET', '/search?query=bulk1234&limit=100', t.guest)).length, 1);
    });

    it("keeps the rebuilt segments out of the merges of the API's commits", async () => {
      await reindex(t.ctx);
      const rebuilt = {
        search_fts: (await fts5Structure(t, 'search_fts')).segments[0],
        search_fts_en: (await fts5Structure(t, 'search_fts_en')).segments[0],
      };
      // One post at a time: each commit writes a segment of its own, and FTS5 merges them as they pile up (with the
      // rebuilt segment on level 1, as before the lift, these posts merged it).
      for (let i = 0; i < 300; i++) {
        await call(t, 'POST', '/posts', w.alice.token, { body: `nebula climb ${i}` });
      }
      for (const [table, segment] of Object.entries(rebuilt)) {
        const { segments } = await fts5Structure(t, table);
        assert.ok(
          segments.some((s) => s.level > 0 && s.id !== segment?.id),
          `${table}: the commits' segments were merged: ${JSON.stringify(segments)}`,
        );
        assert.deepEqual(
          segments.find((s) => s.id === segment?.id),
          segment,
          `${table}: the rebuilt segment stays as it was: ${JSON.stringify(segments)}`,
        );
      }
      assert.equal((await call(t, 'GET', '/search?query=climb&limit=100', t.guest)).length, 100);
    });
  });
}
