import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { deletePostRow, insertPost, updatePostRow } from '../../src/modules/post/post.repository.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
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
    /** SQLite: segments FTS5 has written to each table since it was created (its structure's write counter). */
    const segmentWrites = async () => {
      const counts: number[] = [];
      for (const table of ['search_fts_data', 'search_fts_en_data']) {
        const { rows } = await sql<{
          block: Uint8Array;
        }>`select block from ${sql.table(table)} where id = 10`.execute(t.ctx.db);
        const block = rows[0]?.block ?? assert.fail(`no structure record in ${table}`);
        // A 4-byte cookie, then varints: levels, segments, writes.
        let at = 4;
        const varint = () => {
          let value = 0;
          for (;;) {
            const byte = block[at++] ?? assert.fail('a truncated structure record');
            value = value * 128 + (byte & 0x7f);
            if (byte < 0x80) return value;
          }
        };
        varint();
        varint();
        counts.push(varint());
      }
      return counts;
    };
    /** SQLite: FTS5 checks both tables against search_docs, and no document waits to be indexed. */
    const assertIndexConsistent = async () => {
      if (dialect.name !== 'sqlite') return;
      for (const table of ['search_fts', 'search_fts_en']) {
        await sql`insert into ${sql.table(table)}(${sql.ref(table)}, rank) values ('integrity-check', 1)`.execute(
          t.ctx.db,
        );
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
      const first = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          call(t, 'POST', '/posts', alice.token, { body: `firstburst w${i}x` }),
        ),
      );
      const writesBefore = dialect.name === 'sqlite' ? await segmentWrites() : [];
      const second = await Promise.all([
        ...Array.from({ length: 24 }, (_, i) =>
          call(t, 'POST', '/posts', alice.token, { body: `secondburst v${i}x` }),
        ),
        ...first
          .slice(0, 6)
          .map((p, i) =>
            call(t, 'POST', `/posts/${p.uuid}/update`, alice.token, { body: `editedburst e${i}x` }),
          ),
        ...first.slice(6).map((p) => call(t, 'POST', `/posts/${p.uuid}/delete`, alice.token)),
      ]);
      const created = second.slice(0, 24).map((p) => p.uuid as string);
      assert.deepEqual(new Set(await found('secondburst')), new Set(created));
      for (let i = 0; i < 24; i++) assert.deepEqual(await found(`v${i}x`), [created[i]]);
      assert.deepEqual(new Set(await found('editedburst')), new Set(first.slice(0, 6).map((p) => p.uuid)));
      assert.deepEqual(await found('firstburst'), []);
      for (let i = 0; i < 12; i++) assert.deepEqual(await found(`w${i}x`), []);
      if (dialect.name === 'sqlite') {
        // Indexed row by row, each of the 24 new posts was a segment of its own in each table (the edits' and
        // deletes' entries are written at once and may add a few); together, far fewer.
        const writes = await segmentWrites();
        for (const [i, n] of writes.entries()) {
          assert.ok(n - (writesBefore[i] ?? 0) < 20, `segments written: ${writesBefore} -> ${writes}`);
        }
      }
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
  });
}
