import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { deletePostRow, insertPost, updatePostRow } from '../../src/modules/post/post.repository.ts';
import { reindex } from '../../src/modules/search/search.service.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { fts5Structure } from './fts5-structure.ts';
import { call } from './world.ts';

// docs/search.md, "Indexing at group commit": on SQLite a group of concurrent writes indexes its documents once, just
// before its COMMIT. Whatever the grouping, every acknowledged write is searchable at once, and nothing else is.
for (const dialect of testDialects()) {
  describe(`search: documents indexed at commit [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    const found = async (word: string) =>
      (await call(t, 'GET', `/search?query=${word}&limit=100`, alice.token)).map(
        (i: { uuid: string }) => i.uuid,
      );
    /** SQLite: leaf pages FTS5 has written to each text table since it was created (its structure's counter). */
    const leavesWritten = async () => [
      (await fts5Structure(t, 'search_fts')).writes,
      (await fts5Structure(t, 'search_fts_en')).writes,
    ];
    /** SQLite: both text tables are sound, hold every document of search_docs and no other, and none waits. */
    const assertIndexConsistent = async () => {
      if (dialect.name !== 'sqlite') return;
      for (const table of ['search_fts', 'search_fts_en']) {
        // rank 0: FTS5's own structures only (its text is folded, search_docs' is not, so a comparison would differ).
        await sql`insert into ${sql.table(table)}(${sql.ref(table)}, rank) values ('integrity-check', 0)`.execute(
          t.ctx.db,
        );
        const { rows } = await sql<{ missing: number; extra: number }>`select
            (select count(*) from search_docs d where not exists
              (select 1 from ${sql.table(`${table}_docsize`)} s where s.id = d.id)) as missing,
            (select count(*) from ${sql.table(`${table}_docsize`)} s where not exists
              (select 1 from search_docs d where d.id = s.id)) as extra`.execute(t.ctx.db);
        assert.deepEqual({ ...rows[0] }, { missing: 0, extra: 0 }, table);
      }
      const { rows } = await sql<{ n: number }>`select count(*) as n from search_pending`.execute(t.ctx.db);
      assert.equal(Number(rows[0]?.n), 0);
    };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      alice = await t.createUser('alice');
    });
    after(async () => t?.close());

    it('finds every post of a burst of concurrent writes, with edits and deletes, as acknowledged', async () => {
      const leavesBefore = dialect.name === 'sqlite' ? await leavesWritten() : [];
      const commitsBefore = t.sqliteCommits() ?? 0;
      const first = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          call(t, 'POST', '/posts', alice.token, { body: `firstburst w${i}x` }),
        ),
      );
      if (dialect.name === 'sqlite') {
        // Indexed row by row, each post wrote a segment of its own (a leaf page, for so short a text) to each table:
        // 24 or more. Now each group writes one, and the group commit made a few groups of the 24.
        const commits = (t.sqliteCommits() ?? 0) - commitsBefore;
        const leaves = (await leavesWritten()).map((n, i) => n - (leavesBefore[i] ?? 0));
        assert.ok(commits < 12, `group commits for 24 concurrent posts: ${commits}`);
        for (const n of leaves)
          assert.ok(n <= 2 * commits, `leaves written: ${leaves}, group commits: ${commits}`);
      }
      const second = await Promise.all([
        ...Array.from({ length: 24 }, (_, i) =>
          call(t, 'POST', '/posts', alice.token, { body: `secondburst v${i}x` }),
        ),
        ...first
          .slice(0, 12)
          .map((p, i) =>
            call(t, 'POST', `/posts/${p.uuid}/update`, alice.token, { body: `editedburst e${i}x` }),
          ),
        ...first.slice(12).map((p) => call(t, 'POST', `/posts/${p.uuid}/delete`, alice.token)),
      ]);
      const created = second.slice(0, 24).map((p) => p.uuid as string);
      assert.deepEqual(new Set(await found('secondburst')), new Set(created));
      for (let i = 0; i < 24; i++) assert.deepEqual(await found(`v${i}x`), [created[i]]);
      assert.deepEqual(new Set(await found('editedburst')), new Set(first.slice(0, 12).map((p) => p.uuid)));
      assert.deepEqual(await found('firstburst'), []);
      for (let i = 0; i < 24; i++) assert.deepEqual(await found(`w${i}x`), []);
      await assertIndexConsistent();
    });

    it('indexes nothing of a rolled-back write, and a post changed or deleted before its commit as it ended', async () => {
      const post = (body: string) => ({
        uuid: uuidv7(),
        user_uuid: alice.uuid,
        body,
        visibility: 'public' as const,
        network_uuid: null,
        language: 'en',
        created_at: nowIso(),
        updated_at: nowIso(),
      });
      const kept = post('keptword');
      const gone = post('gonewword');
      const undone = post('rollbackword');
      // Started in one turn of the event loop: on SQLite, members of one group.
      const [failed] = await Promise.allSettled([
        t.ctx.db.transaction().execute(async (trx) => {
          await insertPost(trx, undone);
          // A statement after the insert sends it (a deferred write otherwise waits for the next statement).
          await updatePostRow(trx, undone.uuid, { body: 'rollbackword' });
          throw new Error('this transaction fails after its post was written');
        }),
        t.ctx.db.transaction().execute(async (trx) => {
          await insertPost(trx, kept);
          await updatePostRow(trx, kept.uuid, { body: 'keptnewword' });
          await insertPost(trx, gone);
          await deletePostRow(trx, gone.uuid);
        }),
      ]);
      assert.equal(failed?.status, 'rejected');
      assert.deepEqual(await found('rollbackword'), []);
      assert.deepEqual(await found('keptword'), []);
      assert.deepEqual(await found('keptnewword'), [kept.uuid]);
      assert.deepEqual(await found('gonewword'), []);
      await assertIndexConsistent();
    });

    it('rebuilds the index in one transaction with every document indexed once', async () => {
      const before = await found('keptnewword');
      const { docs } = await reindex(t.ctx);
      assert.ok(docs > 30, `documents rebuilt: ${docs}`);
      assert.deepEqual(await found('keptnewword'), before);
      assert.equal((await found('secondburst')).length, 24);
      await assertIndexConsistent();
      if (dialect.name === 'sqlite') {
        // The rebuild holds 64 MiB of terms per table in memory (REBUILD_HASH_BYTES); the setting is persistent, so it
        // puts FTS5's 1 MiB back for the API's own writes.
        for (const table of ['search_fts', 'search_fts_en', 'search_names_tri']) {
          const { rows } = await sql<{ v: number }>`select v from ${sql.table(`${table}_config`)}
            where k = 'hashsize'`.execute(t.ctx.db);
          assert.deepEqual(
            rows.map((r) => Number(r.v)),
            [1024 * 1024],
            table,
          );
        }
      }
    });
  });
}
