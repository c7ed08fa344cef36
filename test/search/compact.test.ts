import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { searchCommand } from '../../src/cli/commands/search.command.ts';
import { partyToken } from '../../src/modules/search/search.query.ts';
import { compactSearchIndex } from '../../src/modules/search/search.service.ts';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';
import { buildWorld, call, type World } from './world.ts';

// docs/search.md, "Keeping the index compact": `search compact` merges the index after writes and deletes while the
// API runs. It must not change a single answer, for anyone, and deleted items stay gone.
for (const dialect of testDialects()) {
  describe(`search: compacting the index [${dialect.name}]`, () => {
    let t: TestApp;
    let w: World;
    const deleted: string[] = [];
    /** Every answer a set of searches gives, per viewer, in order. */
    const answers = async () => {
      const out: Record<string, string[]> = {};
      for (const [who, token] of [
        ['guest', t.guest],
        ['alice', w.alice.token],
        ['bob', w.bob.token],
        ['carol', w.carol.token],
      ] as const) {
        for (const query of ['nebula', 'neb', 'nebula note', 'secret nebula']) {
          const q = encodeURIComponent(query);
          const list = await call(t, 'GET', `/search?query=${q}&limit=100`, token);
          out[`${who} /search ${query}`] = list.map((i: { uuid: string }) => i.uuid);
          const types = await call(t, 'GET', `/search/types?query=${q}&limit=100`, token);
          out[`${who} /search/types ${query}`] = Object.values(types)
            .flat()
            .map((i) => (i as { uuid: string }).uuid);
        }
      }
      return out;
    };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      w = await buildWorld(t);
      // One write at a time: each leaves a segment of its own in FTS5, and each delete a deletion marker.
      const notes: string[] = [];
      for (let i = 0; i < 60; i++) {
        notes.push((await call(t, 'POST', '/posts', w.alice.token, { body: `nebula note ${i}` })).uuid);
      }
      for (let i = 0; i < 10; i++) {
        await call(t, 'POST', '/posts', w.alice.token, { body: `secret nebula ${i}`, visibility: 'friends' });
      }
      for (const uuid of notes.filter((_, i) => i % 2 === 0)) {
        await call(t, 'POST', `/posts/${uuid}/delete`, w.alice.token);
        deleted.push(uuid);
      }
    });
    after(async () => t?.close());

    it('changes no answer for any viewer, and deleted posts stay gone', async () => {
      const before = await answers();
      assert.equal(before['guest /search nebula note']?.length, 30);
      assert.equal(before['carol /search secret nebula']?.length, 0);
      assert.equal(before['bob /search secret nebula']?.length, 10);
      // SQLite: each segment of this small index is one row of search_fts_idx; merging leaves fewer.
      const segments = async () =>
        dialect.name === 'sqlite'
          ? Number(
              (await sql<{ n: number }>`select count(*) as n from search_fts_idx`.execute(t.ctx.db)).rows[0]
                ?.n,
            )
          : 0;
      const segmentsBefore = await segments();
      const { steps } = await compactSearchIndex(t.ctx);
      if (dialect.name === 'sqlite') {
        // One step per FTS5 table finds nothing left to merge; more than three means some merged.
        assert.ok(steps > 3, `merge steps: ${steps}`);
        assert.ok((await segments()) < segmentsBefore, `segments: ${segmentsBefore} -> ${await segments()}`);
      }
      const afterwards = await answers();
      assert.deepEqual(afterwards, before);
      const found = new Set(Object.values(afterwards).flat());
      assert.deepEqual(
        deleted.filter((uuid) => found.has(uuid)),
        [],
      );
    });

    // The state a compaction leaves, not the change from merging within levels: on an index this small those merges
    // reach one segment too (the levels that stay apart need a large index's sizes; docs/decisions.md).
    it('leaves each FTS5 table in one segment, and every answer as it was (SQLite)', async (ctx) => {
      if (dialect.name !== 'sqlite') return ctx.skip('PostgreSQL has no FTS5 tables');
      // A large segment (documents added in one statement), then small ones on top of it from single writes and
      // deletes, some of them holding deletion markers.
      await sql`with recursive g(i) as (select 1 union all select i + 1 from g where i < 3000)
        insert into search_docs (kind, uuid, visibility, body, created_at, updated_at)
        select 'post', lower(hex(randomblob(16))), 'public', 'filler line ' || i, '2026-01-01T00:00:00.000Z',
          '2026-01-01T00:00:00.000Z' from g`.execute(t.ctx.db);
      for (let i = 0; i < 20; i++) {
        const uuid = (await call(t, 'POST', '/posts', w.alice.token, { body: `comet trail ${i}` })).uuid;
        if (i % 2 === 0) await call(t, 'POST', `/posts/${uuid}/delete`, w.alice.token);
      }
      const before = await answers();
      await compactSearchIndex(t.ctx);
      // A deletion marker is dropped only when its segment merges into the oldest one; merging within a level
      // alone kept one segment per level, and every search of a deleted post's words read its markers.
      for (const table of ['search_fts', 'search_fts_en', 'search_names_tri']) {
        const segments = await sql<{ n: number }>`
          select count(distinct segid) as n from ${sql.table(`${table}_idx`)}`.execute(t.ctx.db);
        assert.equal(Number(segments.rows[0]?.n), 1, `segments of ${table}`);
      }
      assert.deepEqual(await answers(), before);
      const comets = await call(t, 'GET', '/search?query=comet&limit=100', w.alice.token);
      assert.equal(comets.length, 10);
    });

    it('leaves the FTS5 tables consistent with the documents (SQLite)', async (ctx) => {
      if (dialect.name !== 'sqlite') return ctx.skip('PostgreSQL has no FTS5 tables');
      await compactSearchIndex(t.ctx);
      // With rank 1, FTS5 also compares the index with its content table ("database disk image is malformed" when
      // they disagree); without it, only the index's own structure. The documents' tables index a message's parties
      // besides its kind (migration 0020), which the content table does not hold: their entries are checked below.
      await sql
        .raw(`insert into search_names_tri(search_names_tri, rank) values ('integrity-check', 1)`)
        .execute(t.ctx.db);
      const messages = (
        await sql<{ id: number; owner_uuid: string; recipient_uuid: string }>`
          select id, owner_uuid, recipient_uuid from search_docs where kind = 'messages'`.execute(t.ctx.db)
      ).rows;
      assert.ok(messages.length > 0, 'the world has messages');
      for (const table of ['search_fts', 'search_fts_en']) {
        await sql.raw(`insert into ${table}(${table}, rank) values ('integrity-check', 0)`).execute(t.ctx.db);
        const ids = async (match: string) =>
          (
            await sql<{
              id: number;
            }>`select rowid as id from ${sql.table(table)} where ${sql.table(table)} match ${match}`.execute(
              t.ctx.db,
            )
          ).rows.map((r) => Number(r.id));
        const byId = (a: number, b: number) => a - b;
        // Every document under its kind, as the content table says.
        const docs = (
          await sql<{ id: number; kind: string }>`select id, kind from search_docs`.execute(t.ctx.db)
        ).rows;
        for (const kind of new Set(docs.map((d) => d.kind))) {
          assert.deepEqual(
            (await ids(`kind : "${kind}"`)).sort(byId),
            docs
              .filter((d) => d.kind === kind)
              .map((d) => Number(d.id))
              .sort(byId),
            `${kind} documents in ${table}`,
          );
        }
        // A party's token finds their messages and nothing else; carol, a party to none, finds nothing.
        assert.deepEqual(await ids(`kind : "${partyToken(w.carol.uuid)}"`), []);
        for (const m of messages) {
          const parties = `kind : "${partyToken(m.owner_uuid)}" AND kind : "${partyToken(m.recipient_uuid)}"`;
          assert.ok(
            (await ids(parties)).includes(Number(m.id)),
            `message ${m.id} under both parties in ${table}`,
          );
        }
      }
    });

    it('is the `search compact` command; an unknown subcommand is a usage error', async () => {
      const log = console.log;
      const error = console.error;
      const printed: string[] = [];
      console.log = (line: string) => printed.push(line);
      console.error = (line: string) => printed.push(line);
      try {
        assert.equal(await searchCommand.run(t.ctx, ['compact']), 0);
        assert.match(printed.join('\n'), /search index compacted/);
        assert.equal(await searchCommand.run(t.ctx, ['shrink']), 2);
        assert.match(printed.join('\n'), /usage: npm run cli -- search reindex \| search compact/);
      } finally {
        console.log = log;
        console.error = error;
      }
    });
  });
}

// docs/search.md, "Ids of deleted documents": the ranking's recent window is the newest ids, so after the newest
// documents are deleted and the index compacted, the next document takes the id after the newest one left, on
// PostgreSQL as SQLite numbers its rows; a gap of deleted ids at the top would leave the window that much shorter.
for (const dialect of testDialects()) {
  describe(`search: compacting gives the ids of deleted newest documents back [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
    });
    after(async () => t?.close());

    it('numbers the next document after the newest one left', async () => {
      const writer = await t.createUser('numberer');
      const post = async (body: string) =>
        (await call(t, 'POST', '/posts', writer.token, { body })).uuid as string;
      const idOf = async (uuid: string) =>
        Number(
          (await sql<{ id: number }>`select id from search_docs where uuid = ${uuid}`.execute(t.ctx.db))
            .rows[0]?.id,
        );
      const kept = await post('quasar kept');
      for (const body of ['quasar gone one', 'quasar gone two', 'quasar gone three']) {
        await call(t, 'POST', `/posts/${await post(body)}/delete`, writer.token);
      }
      await compactSearchIndex(t.ctx);
      const next = await post('quasar next');
      assert.equal(await idOf(next), (await idOf(kept)) + 1);
      const found = await call(t, 'GET', '/search?query=quasar&order=created_at', t.guest);
      assert.deepEqual(
        found.map((item: { uuid: string }) => item.uuid),
        [next, kept],
      );
    });
  });
}

// PostgreSQL's VACUUM (14 and later) leaves the indexes alone while dead rows sit on under 2% of the table's pages; the
// GIN indexes then keep every deleted document's entries, which each search reads and rechecks. `search compact`
// removes them. On PostgreSQL 12 and 13, which never skip, the first test passes either way.
describe('search: compacting on PostgreSQL [postgres]', () => {
  const dialect = testDialects().find((d) => d.name === 'postgres');
  let t: TestApp;
  before(async () => {
    if (!dialect) return;
    t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
  });
  after(async () => t?.close());

  it('leaves no entry of a deleted post, even when its rows are a small part of the table', async (ctx) => {
    if (!dialect) return ctx.skip('TEST_PG_URL is not set');
    // Enough other documents that the deleted posts' rows sit on well under 2% of the table's pages.
    await sql`insert into search_docs (kind, uuid, visibility, body, created_at, updated_at)
      select 'post', gen_random_uuid()::text, 'public', 'filler line ' || g, now(), now()
      from generate_series(1, 8000) g`.execute(t.ctx.db);
    const author = await t.createUser();
    const posts: string[] = [];
    for (let i = 0; i < 20; i++) {
      posts.push((await call(t, 'POST', '/posts', author.token, { body: `quasar light ${i}` })).uuid);
    }
    for (const uuid of posts.slice(0, 15)) await call(t, 'POST', `/posts/${uuid}/delete`, author.token);
    await compactSearchIndex(t.ctx);
    // The ids the main GIN index returns for the word, before the rows are looked at.
    const entries = await t.ctx.db.connection().execute(async (conn) => {
      await sql`set enable_seqscan = off`.execute(conn);
      try {
        const plan = await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json)
          select id from search_docs where tsv @@ to_tsquery('simple', 'quasar')`.execute(conn);
        return bitmapIndexRows(plan.rows[0]?.['QUERY PLAN']);
      } finally {
        await sql`reset enable_seqscan`.execute(conn);
      }
    });
    assert.equal(entries, 5);
    const found = await call(t, 'GET', '/search?query=quasar&limit=100', author.token);
    assert.deepEqual(found.map((p: { uuid: string }) => p.uuid).sort(), posts.slice(15).sort());
  });

  // The rewind's lock waits for writes of search_docs in progress. Behind one that stays open it gives up after a few
  // short waits instead of holding every other writer back, and the compaction goes on.
  it('leaves the ids as they are, gives no id twice, and still compacts', async (ctx) => {
    if (!dialect) return ctx.skip('TEST_PG_URL is not set');
    const writer = await t.createUser('holder');
    const post = async (body: string) =>
      (await call(t, 'POST', '/posts', writer.token, { body })).uuid as string;
    await call(t, 'POST', `/posts/${await post('magnetar gone')}/delete`, writer.token);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = () => {};
    const open = new Promise<void>((resolve) => {
      started = resolve;
    });
    const writing = t.ctx.db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await sql`insert into search_docs (kind, uuid, visibility, body, created_at, updated_at)
        values ('post', gen_random_uuid()::text, 'public', 'magnetar held open', now(), now())`.execute(conn);
      started();
      await held;
      await sql`commit`.execute(conn);
    });
    await open;
    try {
      assert.deepEqual(await compactSearchIndex(t.ctx), { steps: 0 });
    } finally {
      release();
      await writing;
    }
    await post('magnetar after');
    const ids = await sql<{ n: number; distinct_ids: number }>`
      select count(*) as n, count(distinct id) as distinct_ids from search_docs`.execute(t.ctx.db);
    assert.equal(Number(ids.rows[0]?.n), Number(ids.rows[0]?.distinct_ids));
    const found = await call(t, 'GET', '/search?query=magnetar&order=created_at', t.guest);
    assert.equal(found.length, 1, 'the post written after; the document held open belongs to no post');
  });
});

/** The rows of the first Bitmap Index Scan in an `explain (analyze, format json)` plan. */
function bitmapIndexRows(plan: unknown): number {
  const walk = (node: Record<string, unknown>): number | undefined => {
    if (node['Node Type'] === 'Bitmap Index Scan') return Number(node['Actual Rows']);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) {
      const rows = walk(child);
      if (rows !== undefined) return rows;
    }
    return undefined;
  };
  const top = (plan as { Plan: Record<string, unknown> }[])[0]?.Plan;
  const rows = top ? walk(top) : undefined;
  assert.ok(rows !== undefined, `no bitmap index scan in ${JSON.stringify(plan)}`);
  return rows;
}
