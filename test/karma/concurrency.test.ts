import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { uuidv7 } from '../../src/db/time.ts';
import { checkKarmaTotals } from '../../src/modules/karma/karma.service.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { KarmaDriver, ledger, storedKarma } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'karma-conc-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const N = 200;

const EMOTIONS = ['like', 'love', 'haha', 'wow', 'sad', 'angry'];

/** N reactions through POST /posts/{uuid}/emotions, all at once: each of ceil(N/6) users with up to six emotions. */
async function parallelHttpReactions(t: TestApp, post: string): Promise<number[]> {
  const reactors = await Promise.all(
    Array.from({ length: Math.ceil(N / EMOTIONS.length) }, () => t.createUser()),
  );
  const calls = Array.from({ length: N }, (_, i) => {
    const user = reactors[Math.floor(i / EMOTIONS.length)] as TestUser;
    const name = EMOTIONS[i % EMOTIONS.length] as string;
    return t.inject({ method: 'POST', url: `/posts/${post}/emotions`, token: user.token, payload: { name } });
  });
  return (await Promise.all(calls)).map((r) => r.statusCode);
}

/** N reactions to one post by N different users, each in its own transaction, all at once. */
async function parallelReactions(t: TestApp, author: TestUser, post: string): Promise<void> {
  await Promise.all(
    Array.from({ length: N }, () =>
      t.ctx.db.transaction().execute(async (trx) => {
        await t.ctx.bus.emit(trx, {
          name: 'emotionCreated',
          actorUuid: uuidv7(),
          targetUuid: post,
          targetType: 'post',
          data: { emotion: 'like', author_uuid: author.uuid, association_uuid: uuidv7() },
        });
      }),
    ),
  );
}

for (const dialect of testDialects()) {
  describe(`karma under concurrency, no cap [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    before(async () => {
      const rules = join(dir, `nocap-${dialect.name}.json`);
      writeFileSync(rules, JSON.stringify({ daily_cap: null }));
      t = await startTestApp(dialect, { KARMA_RULES: rules });
      d = new KarmaDriver(t);
    });
    after(async () => t?.close());

    it(`${N} parallel reactions lose no update of the total`, async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      await parallelReactions(t, author, post);
      assert.equal(await storedKarma(t, author.uuid), 2 + N);
      assert.equal((await ledger(t, author.uuid)).length, N + 1);
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });

    it(`${N} parallel HTTP reactions to one post lose no update of the author total`, async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      const statuses = await parallelHttpReactions(t, post);
      assert.deepEqual(
        statuses.filter((s) => s !== 200 && s !== 201),
        [],
      );
      assert.equal(await storedKarma(t, author.uuid), 2 + N);
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });

    it(`${N} parallel HTTP posts by one user lose no update of the total`, async () => {
      const u = await t.createUser();
      const probe = await t.inject({
        method: 'POST',
        url: '/posts',
        token: u.token,
        payload: { body: 'probe' },
      });
      assert.equal(probe.statusCode, 201, probe.body);
      const results = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          t.inject({ method: 'POST', url: '/posts', token: u.token, payload: { body: `post ${i}` } }),
        ),
      );
      const failed = results.filter((r) => r.statusCode !== 201);
      assert.deepEqual(failed.map((r) => r.body).slice(0, 3), []);
      assert.equal(await storedKarma(t, u.uuid), 2 * (N + 1));
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });
  });

  describe(`karma daily cap under concurrency [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    before(async () => {
      t = await startTestApp(dialect);
      d = new KarmaDriver(t);
    });
    after(async () => t?.close());

    it(`${N} parallel reactions: exactly the cap (50) earn points, the rest are 0-point records`, async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      await parallelReactions(t, author, post);
      const rows = (await ledger(t, author.uuid)).filter((r) => r.event === 'emotionReceived');
      assert.equal(rows.length, N);
      assert.equal(rows.filter((r) => Number(r.points) === 1).length, 50);
      assert.equal(rows.filter((r) => Number(r.points) === 0).length, N - 50);
      assert.equal(await storedKarma(t, author.uuid), 2 + 50);
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });

    it(`${N} parallel HTTP reactions: exactly the cap earn points`, async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      const statuses = await parallelHttpReactions(t, post);
      assert.deepEqual(
        statuses.filter((s) => s !== 200 && s !== 201),
        [],
      );
      const rows = (await ledger(t, author.uuid)).filter((r) => r.event === 'emotionReceived');
      assert.equal(rows.length, N);
      assert.equal(rows.filter((r) => Number(r.points) === 1).length, 50);
      assert.equal(await storedKarma(t, author.uuid), 2 + 50);
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });
  });
}
