import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { checkKarmaTotals } from '../../src/modules/karma/karma.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { KarmaDriver, ledger, ledgerSum, storedKarma } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'karma-inv-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `npm run cli -- check` against the test database (the same Node that runs the tests). */
function runCheck(t: TestApp): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, ['src/cli/main.ts', 'check'], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: {
      ...process.env,
      DATABASE_URL: t.url,
      LOG_LEVEL: 'silent',
      KARMA_RULES: t.ctx.config.KARMA_RULES ?? '',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

for (const dialect of testDialects()) {
  describe(`karma invariant [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    let users: TestUser[];
    before(async () => {
      const rules = join(dir, `rules-${dialect.name}.json`);
      writeFileSync(rules, JSON.stringify({ rules: { emotionReceived: { daily_cap: 4 } } }));
      t = await startTestApp(dialect, { KARMA_RULES: rules });
      d = new KarmaDriver(t);
      users = [];
      for (let i = 0; i < 4; i++) users.push(await t.createUser());
    });
    after(async () => t?.close());

    it('after a scripted social session every total equals its ledger, and check passes', async () => {
      const [ann, ben, cat, dan] = users as [TestUser, TestUser, TestUser, TestUser];
      const annPost = await d.createPost(ann, 'ann says hi');
      const benPost = await d.createPost(ben, 'ben says hi');
      const c1 = await d.createComment(ben, annPost);
      const c2 = await d.createComment(cat, annPost);
      await d.createComment(ann, benPost);
      const annBen = await d.connect(ann, ben);
      const catDan = await d.connect(cat, dan);
      await d.connect(dan, ann);
      const net = await d.createNetwork(cat);
      await d.createMedia(dan);
      // Reactions: five on ann's post (cap 4 makes one of them worth 0), some on comments, one on one's own post.
      for (const [u, e] of [
        [ben, 'like'],
        [cat, 'like'],
        [dan, 'like'],
        [ben, 'love'],
        [cat, 'wow'],
      ] as const) {
        await d.react(u, 'post', annPost, ann.uuid, e);
      }
      await d.react(ann, 'post', annPost, ann.uuid, 'haha');
      await d.react(ann, 'comment', c1, ben.uuid);
      await d.react(dan, 'comment', c2, cat.uuid);
      // Edits and deletions.
      await d.unreact(cat, 'post', annPost, ann.uuid, 'like');
      await d.deleteComment(cat, c2, annPost);
      await d.disconnect(ben, annBen, ann, ben);
      await d.deleteNetwork(cat, net);
      const [danFirst] = await ledger(t, dan.uuid);
      const edit = await t.inject({
        method: 'POST',
        url: `/karma/${danFirst?.uuid}/update`,
        token: dan.token,
        payload: {
          event: 'connectionConfirmed',
          target_uuid: catDan,
          target_type: 'connection',
          karma_type: 'add',
          points: 3,
        },
      });
      assert.equal(edit.statusCode, 200, edit.body);
      const benRecords = await ledger(t, ben.uuid);
      const del = await t.inject({
        method: 'POST',
        url: `/karma/${benRecords[0]?.uuid}/delete`,
        token: ben.token,
      });
      assert.equal(del.statusCode, 200);
      await d.deletePost(ann, annPost);

      for (const u of users)
        assert.equal(await storedKarma(t, u.uuid), await ledgerSum(t, u.uuid), u.username);
      // The API total agrees with the stored one.
      const me = await t.inject({ method: 'GET', url: `/users/${ann.uuid}`, token: ann.token });
      assert.equal(me.statusCode, 200, me.body);
      assert.equal(body(me).data.karma, await storedKarma(t, ann.uuid));
      // ann keeps 2 (ben's comment) + 5 (dan) = 7 after losing the post, its reactions and the connection to ben.
      assert.equal(await storedKarma(t, ann.uuid), 1 + 5);
      const result = await checkKarmaTotals(t.ctx.db);
      assert.deepEqual(result.mismatches, []);
      assert.ok(result.records > 10);
      const cli = runCheck(t);
      assert.equal(cli.code, 0, cli.out);
      assert.match(cli.out, /check OK/);
    });

    it('check reports a tampered total and exits 1', async () => {
      const victim = users[1] as TestUser;
      await t.ctx.db
        .updateTable('users')
        .set({ karma: sql`karma + 7` })
        .where('uuid', '=', victim.uuid)
        .execute();
      const result = await checkKarmaTotals(t.ctx.db);
      assert.equal(result.mismatches.length, 1);
      assert.equal(result.mismatches[0]?.uuid, victim.uuid);
      assert.equal((result.mismatches[0]?.stored ?? 0) - (result.mismatches[0]?.ledger ?? 0), 7);
      const cli = runCheck(t);
      assert.equal(cli.code, 1, cli.out);
      assert.match(cli.out, new RegExp(`${victim.uuid}.*difference 7`));
      await t.ctx.db
        .updateTable('users')
        .set({ karma: sql`karma - 7` })
        .where('uuid', '=', victim.uuid)
        .execute();
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });

    it('a deleted user takes the ledger along; the others stay consistent', async () => {
      const u = await t.createUser();
      const other = await t.createUser();
      const p = await d.createPost(u);
      await d.createComment(other, p);
      await d.connect(u, other);
      const res = await t.inject({ method: 'POST', url: `/users/${u.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 200, res.body);
      const left = await t.ctx.db
        .selectFrom('karma')
        .select('uuid')
        .where('user_uuid', '=', u.uuid)
        .execute();
      assert.deepEqual(left, []);
      assert.equal(await storedKarma(t, other.uuid), await ledgerSum(t, other.uuid));
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });
  });
}
