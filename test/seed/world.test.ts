import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, mock } from 'node:test';
import { sql } from 'kysely';
import { vocabulary } from '../../src/cli/seed/vocabulary.ts';
import { SEED_PASSWORD, WORLD_DEFAULTS, World, type WorldCounts } from '../../src/cli/seed/world.ts';
import { checkKarmaTotals } from '../../src/modules/karma/karma.service.ts';
import { checkAssociationAudiences } from '../../src/modules/tag-association/tag-association.service.ts';
import { body, insertTestUser, startTestApp, type TestApp, testDialects } from '../helper.ts';

const OPTIONS = { ...WORLD_DEFAULTS, users: 30, posts: 200, seed: 42, batch: 64, bulk: false };

async function firstPost(t: TestApp) {
  return t.ctx.db
    .selectFrom('posts')
    .select(['body', 'visibility', 'language'])
    .orderBy('created_at')
    .orderBy('uuid')
    .executeTakeFirstOrThrow();
}

async function tableCounts(t: TestApp): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of [
    'users',
    'posts',
    'comments',
    'friends',
    'karma',
    'tags',
    'tag_associations',
  ] as const) {
    const row = await t.ctx.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

/** What the search index holds, without the uuids (they come from the clock and differ between the two worlds). */
async function searchContent(t: TestApp) {
  const docs = await sql<{ kind: string; to_nobody: unknown }>`
    select kind, visibility, recipient_uuid is null as to_nobody, language, title, body from search_docs
    order by kind, body, title, visibility, language`.execute(t.ctx.db);
  const names = await sql<Record<string, unknown>>`
    select kind, name, name_fold from search_names order by kind, name, name_fold`.execute(t.ctx.db);
  return { docs: docs.rows.map((r) => ({ ...r, to_nobody: Boolean(r.to_nobody) })), names: names.rows };
}

/** Tags with their counts, and the karma ledger summed per rule. */
async function tagsAndKarma(t: TestApp) {
  const tags = await t.ctx.db
    .selectFrom('tags')
    .select(['tag_type', 'name_key', 'associations_count'])
    .orderBy('tag_type')
    .orderBy('name_key')
    .execute();
  const karma = await t.ctx.db
    .selectFrom('karma')
    .select((eb) => ['event', eb.fn.sum<number>('points').as('points'), eb.fn.countAll<number>().as('n')])
    .groupBy('event')
    .orderBy('event')
    .execute();
  return { tags, karma: karma.map((k) => ({ event: k.event, points: Number(k.points), n: Number(k.n) })) };
}

/** The schema objects a bulk load sets aside and must put back: indexes and triggers with their definitions. */
async function schemaObjects(t: TestApp): Promise<unknown[]> {
  if (t.ctx.dialect === 'sqlite') {
    const r = await sql`
      select type, name, tbl_name, sql from sqlite_master where type in ('index', 'trigger') order by type, name`.execute(
      t.ctx.db,
    );
    // Foreign keys are enforced again on the connection after the bulk path switched them off.
    const fk = await sql`pragma foreign_keys`.execute(t.ctx.db);
    return [...r.rows, ...fk.rows];
  }
  const indexes = await sql`
    select indexname, indexdef from pg_indexes where schemaname = current_schema() order by indexname`.execute(
    t.ctx.db,
  );
  const triggers = await sql`
    select tgname, tgenabled from pg_trigger where not tgisinternal order by tgname`.execute(t.ctx.db);
  const constraints = await sql`
    select conname, conrelid::regclass::text as on_table, pg_get_constraintdef(oid) as def from pg_constraint
    where connamespace = current_schema()::regnamespace order by conname`.execute(t.ctx.db);
  return [...indexes.rows, ...triggers.rows, ...constraints.rows];
}

for (const dialect of testDialects()) {
  describe(`seeded world (${dialect.name})`, () => {
    let a: TestApp;
    let b: TestApp;
    let c: TestApp;
    let countsA: WorldCounts;
    let countsB: WorldCounts;

    before(async () => {
      a = await startTestApp(dialect);
      b = await startTestApp(dialect);
      c = await startTestApp(dialect);
      // The same seed through the event path and through the bulk path: the worlds must be identical. The event
      // path's search index is left as the API's triggers wrote it, so the bulk path's rebuild is compared with them.
      countsA = await new World(a.ctx, { ...OPTIONS, indexAsWritten: true }).run();
      countsB = await new World(b.ctx, { ...OPTIONS, bulk: true }).run();
      // A smaller world through the event path as `npm run seed -- --no-bulk` writes it: rebuilt in creation order.
      await new World(c.ctx, { ...OPTIONS, users: 10, posts: 60 }).run();
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await c?.close();
    });

    it('is deterministic: the same seed gives the same counts and first post, on the event and the bulk path', async () => {
      assert.deepEqual(countsA, countsB);
      assert.equal(countsA.users, 31); // 30 + bench_user
      assert.equal(countsA.posts, 200);
      assert.ok(countsA.connections > 0 && countsA.comments > 0 && countsA.reactions > 0);
      assert.deepEqual(await tableCounts(a), await tableCounts(b));
      assert.deepEqual(await firstPost(a), await firstPost(b));
      const karmaOf = (t: TestApp) =>
        t.ctx.db.selectFrom('users').select(['username', 'karma']).orderBy('username').execute();
      assert.deepEqual(await karmaOf(a), await karmaOf(b));
      assert.deepEqual((await checkKarmaTotals(b.ctx.db)).mismatches, []);
    });

    it('gives the same search documents and names, tag counts and karma per rule on both paths', async () => {
      const [searchA, searchB] = [await searchContent(a), await searchContent(b)];
      // Every item is indexed: users, networks, posts, comments, media and messages.
      const kinds = new Set(searchB.docs.map((d) => d.kind));
      assert.deepEqual([...kinds].sort(), ['comment', 'media', 'messages', 'network', 'post', 'user']);
      assert.equal(searchB.docs.length, searchA.docs.length);
      assert.deepEqual(searchB, searchA);
      assert.deepEqual(await tagsAndKarma(b), await tagsAndKarma(a));
      // The audience each association copies from its target (set by a trigger the bulk path turns off on PostgreSQL).
      assert.deepEqual(await checkAssociationAudiences(b.ctx.db, 1000), []);
      assert.deepEqual(await checkAssociationAudiences(a.ctx.db, 1000), []);
    });

    it('leaves the schema as migrated: every index and trigger the bulk path set aside is back', async () => {
      const objects = await schemaObjects(b);
      assert.ok(objects.length > 50, `indexes and triggers listed (${objects.length})`);
      assert.deepEqual(objects, await schemaObjects(a));
    });

    it('puts every index, trigger and constraint back when a bulk batch fails', async () => {
      const failing = await startTestApp(dialect);
      try {
        // bench_user exists already: the first batch of users breaks the unique name and the load stops there.
        await insertTestUser(failing.ctx, failing.client.id, 'bench_user');
        await assert.rejects(new World(failing.ctx, { ...OPTIONS, bulk: true }).run());
        assert.deepEqual(await schemaObjects(failing), await schemaObjects(a));
        const users = await failing.ctx.db.selectFrom('users').select('username').execute();
        assert.deepEqual(users, [{ username: 'bench_user' }]);
        // The search index holds what the base tables hold, and its triggers follow new writes again.
        await insertTestUser(failing.ctx, failing.client.id, 'after_failure');
        const docs = await sql<{ title: string }>`
          select title from search_docs where kind = 'user' order by title`.execute(failing.ctx.db);
        assert.deepEqual(
          docs.rows.map((d) => d.title),
          ['after_failure', 'bench_user'],
        );
      } finally {
        await failing.close();
      }
    });

    it('uses every visibility and the three languages', async () => {
      const rows = await a.ctx.db.selectFrom('posts').select(['visibility', 'language']).execute();
      assert.deepEqual([...new Set(rows.map((r) => r.visibility))].sort(), ['friends', 'private', 'public']);
      assert.deepEqual([...new Set(rows.map((r) => r.language))].sort(), ['de', 'en', 'fr']);
    });

    it('writes real hashtags: a seeded one is listed by GET /tags with its associations', async () => {
      const post = await b.ctx.db
        .selectFrom('posts')
        .select('body')
        .where('body', 'like', '%#%')
        .where('visibility', '=', 'public')
        .orderBy('created_at')
        .executeTakeFirstOrThrow();
      const name = /#([\p{L}\p{N}_]+)/u.exec(post.body)?.[1] as string;
      const res = await b.inject({
        method: 'GET',
        url: `/tags?filterby[tag_type]=hashtag&filterby[name]=${encodeURIComponent(name)}`,
        token: b.guest,
      });
      assert.equal(res.statusCode, 200);
      const [tag] = body(res).data;
      assert.ok(tag, `hashtag ${name} is listed`);
      assert.ok(tag.associations_count >= 1);
    });

    it('indexes the content on both paths: a seeded word is found by GET /search', async () => {
      for (const t of [a, b]) await expectSearchFinds(t);
    });

    it('indexes every item in creation order on both paths, so order=created_at lists the newest first', async () => {
      // The generator writes kind after kind, each spread over the seeded year; the index must not keep that order.
      const word = vocabulary('en', OPTIONS.vocabularySize, OPTIONS.seed)[0] as string;
      for (const t of [b, c]) {
        const inversions = await sql<{ n: number }>`
          select count(*) as n from (select created_at, lag(created_at) over (order by id) as before from search_docs) d
          where created_at < before`.execute(t.ctx.db);
        assert.equal(Number(inversions.rows[0]?.n), 0, 'search_docs ids follow created_at');
        const res = await t.inject({
          method: 'GET',
          url: `/search?query=${encodeURIComponent(word)}&order=created_at&limit=100`,
          token: t.guest,
        });
        assert.equal(res.statusCode, 200);
        const items = body(res).data as { type: string; created_at: string }[];
        assert.ok(new Set(items.map((i) => i.type)).size >= 2, `"${word}" is found in several kinds`);
        const times = items.map((i) => Date.parse(i.created_at));
        assert.deepEqual(
          times,
          [...times].sort((x, y) => y - x),
        );
      }
    });

    async function expectSearchFinds(t: TestApp) {
      const post = await t.ctx.db
        .selectFrom('posts')
        .select(['uuid', 'body'])
        .where('visibility', '=', 'public')
        .orderBy('created_at', 'desc')
        .executeTakeFirstOrThrow();
      const word = post.body
        .split(' ')
        .filter((w) => /^[a-z]{5,}$/.test(w))
        .sort((x, y) => y.length - x.length)[0];
      assert.ok(word, `the post "${post.body}" has a plain word`);
      const res = await t.inject({
        method: 'GET',
        url: `/search?query=${encodeURIComponent(word)}&limit=100`,
        token: t.guest,
      });
      assert.equal(res.statusCode, 200);
      assert.ok(
        body(res).data.some((item: { uuid: string }) => item.uuid === post.uuid),
        `the post with "${word}" is found`,
      );
    }

    it('keeps karma consistent: every total equals its ledger, and authors earned points', async () => {
      const check = await checkKarmaTotals(a.ctx.db);
      assert.deepEqual(check.mismatches, []);
      assert.ok(check.records > 0);
      const top = await a.ctx.db
        .selectFrom('users')
        .select('karma')
        .orderBy('karma', 'desc')
        .executeTakeFirstOrThrow();
      assert.ok(top.karma > 0);
    });

    it('lets bench_user log in with the documented password', async () => {
      const res = await a.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'password',
          username: 'bench_user',
          password: SEED_PASSWORD,
          client_id: a.client.id,
          client_secret: a.client.secret,
        },
      });
      assert.equal(res.statusCode, 200);
      assert.ok(JSON.parse(res.body).access_token);
    });
  });
}

for (const dialect of testDialects()) {
  describe(`seeded world past midnight (${dialect.name})`, () => {
    it('gives the karma of a seed within one day: the bulk path counts its daily caps over the whole load', async () => {
      // Caps of 3 records per user, rule and day, which the world's busier authors and reactors pass.
      const folder = mkdtempSync(join(tmpdir(), 'seed-midnight-'));
      const rules = join(folder, 'karma-rules.json');
      writeFileSync(rules, JSON.stringify({ daily_cap: 3 }));
      const sameDay = await startTestApp(dialect, { KARMA_RULES: rules });
      const pastMidnight = await startTestApp(dialect, { KARMA_RULES: rules });
      const karmaOf = (t: TestApp) =>
        t.ctx.db.selectFrom('users').select(['username', 'karma']).orderBy('username').execute();
      try {
        await new World(sameDay.ctx, { ...OPTIONS, bulk: true }).run();
        // The clock a second before midnight, moved an hour on after the first batch of posts.
        mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-03-01T23:59:59.000Z') });
        let crossed = false;
        try {
          await new World(pastMidnight.ctx, { ...OPTIONS, bulk: true }).run((phase, done) => {
            if (crossed || phase !== 'posts' || done === 0) return;
            crossed = true;
            mock.timers.tick(3_600_000);
          });
        } finally {
          mock.timers.reset();
        }
        assert.ok(crossed, 'the clock passed midnight during the posts');
        const capped = await pastMidnight.ctx.db
          .selectFrom('karma')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('points', '=', 0)
          .executeTakeFirstOrThrow();
        assert.ok(Number(capped.n) > 0, 'some records were past their cap');
        assert.deepEqual(await karmaOf(pastMidnight), await karmaOf(sameDay));
      } finally {
        await sameDay.close();
        await pastMidnight.close();
        rmSync(folder, { recursive: true, force: true });
      }
    });
  });
}
