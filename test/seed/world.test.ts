import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SEED_PASSWORD, WORLD_DEFAULTS, World, type WorldCounts } from '../../src/cli/seed/world.ts';
import { checkKarmaTotals } from '../../src/modules/karma/karma.service.ts';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';

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

for (const dialect of testDialects()) {
  describe(`seeded world (${dialect.name})`, () => {
    let a: TestApp;
    let b: TestApp;
    let countsA: WorldCounts;
    let countsB: WorldCounts;

    before(async () => {
      a = await startTestApp(dialect);
      b = await startTestApp(dialect);
      // The same seed through the event path and through the bulk path: the worlds must be identical.
      countsA = await new World(a.ctx, OPTIONS).run();
      countsB = await new World(b.ctx, { ...OPTIONS, bulk: true }).run();
    });
    after(async () => {
      await a?.close();
      await b?.close();
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

    it('indexes the content: a seeded word is found by GET /search', async () => {
      const post = await a.ctx.db
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
      const res = await a.inject({
        method: 'GET',
        url: `/search?query=${encodeURIComponent(word)}&limit=100`,
        token: a.guest,
      });
      assert.equal(res.statusCode, 200);
      assert.ok(
        body(res).data.some((item: { uuid: string }) => item.uuid === post.uuid),
        `the post with "${word}" is found`,
      );
    });

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
