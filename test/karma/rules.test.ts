import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { checkKarmaTotals } from '../../src/modules/karma/karma.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { KarmaDriver, ledger, ledgerSum, storedKarma } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'karma-rules-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function rulesFile(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

for (const dialect of testDialects()) {
  describe(`karma rules [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      d = new KarmaDriver(t);
      alice = await t.createUser();
      bob = await t.createUser();
    });
    after(async () => t?.close());

    async function assertConsistent(): Promise<void> {
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    }

    it('postCreated grants 2 to the author, and deleting the post writes postDeleted subtracting 2', async () => {
      const u = await t.createUser();
      const post = await d.createPost(u);
      assert.equal(await storedKarma(t, u.uuid), 2);
      let rows = await ledger(t, u.uuid);
      assert.deepEqual(
        rows.map((r) => [r.event, r.karma_type, Number(r.points), r.target_uuid, r.target_type]),
        [['postCreated', 'add', 2, post, 'post']],
      );
      await d.deletePost(u, post);
      rows = await ledger(t, u.uuid);
      assert.deepEqual(
        rows.map((r) => [r.event, r.karma_type, Number(r.points), r.target_uuid]),
        [
          ['postCreated', 'add', 2, post],
          ['postDeleted', 'subtract', 2, post],
        ],
      );
      assert.equal(await storedKarma(t, u.uuid), 0);
      await assertConsistent();
    });

    it('commentCreated grants 1; commentDeleted takes it back', async () => {
      const u = await t.createUser();
      const post = await d.createPost(alice);
      const comment = await d.createComment(u, post);
      assert.equal(await storedKarma(t, u.uuid), 1);
      await d.deleteComment(u, comment, post);
      assert.equal(await storedKarma(t, u.uuid), 0);
      const rows = await ledger(t, u.uuid);
      assert.deepEqual(
        rows.map((r) => [r.event, r.karma_type, Number(r.points), r.target_type]),
        [
          ['commentCreated', 'add', 1, 'comment'],
          ['commentDeleted', 'subtract', 1, 'comment'],
        ],
      );
      await assertConsistent();
    });

    it('mediaCreated grants 1; mediaDeleted takes it back', async () => {
      const u = await t.createUser();
      const media = await d.createMedia(u);
      assert.equal(await storedKarma(t, u.uuid), 1);
      await d.deleteMedia(u, media);
      assert.equal(await storedKarma(t, u.uuid), 0);
      assert.deepEqual(
        (await ledger(t, u.uuid)).map((r) => [r.event, r.karma_type, Number(r.points)]),
        [
          ['mediaCreated', 'add', 1],
          ['mediaDeleted', 'subtract', 1],
        ],
      );
    });

    it('networkCreated grants 10; networkDeleted takes it back', async () => {
      const u = await t.createUser();
      const network = await d.createNetwork(u);
      assert.equal(await storedKarma(t, u.uuid), 10);
      await d.deleteNetwork(u, network);
      assert.equal(await storedKarma(t, u.uuid), 0);
      assert.deepEqual(
        (await ledger(t, u.uuid)).map((r) => [r.event, r.karma_type, Number(r.points), r.target_type]),
        [
          ['networkCreated', 'add', 10, 'network'],
          ['networkDeleted', 'subtract', 10, 'network'],
        ],
      );
    });

    it('connectionConfirmed grants 5 to each side; connectionDeleted takes it back from both', async () => {
      const a = await t.createUser();
      const b = await t.createUser();
      const connection = await d.connect(a, b);
      assert.equal(await storedKarma(t, a.uuid), 5);
      assert.equal(await storedKarma(t, b.uuid), 5);
      for (const u of [a, b]) {
        assert.deepEqual(
          (await ledger(t, u.uuid)).map((r) => [r.event, r.karma_type, Number(r.points), r.target_uuid]),
          [['connectionConfirmed', 'add', 5, connection]],
        );
      }
      await d.disconnect(b, connection, a, b);
      for (const u of [a, b]) {
        assert.equal(await storedKarma(t, u.uuid), 0);
        assert.deepEqual(
          (await ledger(t, u.uuid)).map((r) => [r.event, r.karma_type, Number(r.points)]),
          [
            ['connectionConfirmed', 'add', 5],
            ['connectionDeleted', 'subtract', 5],
          ],
        );
      }
      await assertConsistent();
    });

    it('a reaction grants emotionReceived 1 to the author; removing it writes emotionRemoved', async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      await d.react(bob, 'post', post, author.uuid, 'like');
      assert.equal(await storedKarma(t, author.uuid), 3);
      assert.equal(await storedKarma(t, bob.uuid), 0, 'the reacting user earns nothing');
      const comment = await d.createComment(author, post);
      await d.react(alice, 'comment', comment, author.uuid, 'love');
      assert.equal(await storedKarma(t, author.uuid), 5);
      await d.unreact(bob, 'post', post, author.uuid, 'like');
      assert.equal(await storedKarma(t, author.uuid), 4);
      const rows = (await ledger(t, author.uuid)).filter((r) => r.event.startsWith('emotion'));
      assert.deepEqual(
        rows.map((r) => [r.event, r.karma_type, Number(r.points), r.target_uuid, r.target_type]),
        [
          ['emotionReceived', 'add', 1, post, 'post'],
          ['emotionReceived', 'add', 1, comment, 'comment'],
          ['emotionRemoved', 'subtract', 1, post, 'post'],
        ],
      );
      await assertConsistent();
    });

    it("deleting a post takes back its reactions' points however their records were edited", async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      const other = await d.createPost(author, 'another post');
      await d.react(bob, 'post', post, author.uuid, 'like');
      await d.react(alice, 'post', post, author.uuid, 'love');
      assert.equal(await storedKarma(t, author.uuid), 6);
      const [renamed, retargeted] = (await ledger(t, author.uuid)).filter(
        (r) => r.event === 'emotionReceived',
      );
      // Kept at 1 point each: one under the compensation's name, one moved onto the author's other post.
      const edits = [
        [renamed?.uuid, { event: 'emotionRemoved', target_uuid: post }],
        [retargeted?.uuid, { event: 'emotionReceived', target_uuid: other }],
      ] as const;
      for (const [uuid, edit] of edits) {
        const res = await t.inject({
          method: 'POST',
          url: `/karma/${uuid}/update`,
          token: author.token,
          payload: { ...edit, target_type: 'post', karma_type: 'add', points: 1 },
        });
        assert.equal(res.statusCode, 200, res.body);
      }
      await d.deletePost(author, post);
      assert.equal(await storedKarma(t, author.uuid), 2, "only the other post's 2 points are left");
      await assertConsistent();
    });

    it("a record its owner moved onto someone else's post is not taken back when that post goes", async () => {
      const author = await t.createUser();
      const stranger = await t.createUser();
      const post = await d.createPost(author);
      const theirs = await d.createPost(stranger, 'not the author post');
      await d.react(bob, 'post', post, author.uuid, 'like');
      assert.equal(await storedKarma(t, author.uuid), 3);
      const record = (await ledger(t, author.uuid)).find((r) => r.event === 'emotionReceived');
      const moved = await t.inject({
        method: 'POST',
        url: `/karma/${record?.uuid}/update`,
        token: author.token,
        payload: {
          event: 'emotionReceived',
          target_uuid: theirs,
          target_type: 'post',
          karma_type: 'add',
          points: 1,
        },
      });
      assert.equal(moved.statusCode, 200, moved.body);
      // The reaction is still on the author's post: the other post's deletion takes nothing from the author.
      await d.deletePost(stranger, theirs);
      assert.equal(await storedKarma(t, author.uuid), 3);
      // Taken back when the reaction itself goes.
      await d.unreact(bob, 'post', post, author.uuid, 'like');
      assert.equal(await storedKarma(t, author.uuid), 2);
      await assertConsistent();
    });

    it('two reactions on one post: removing one takes back only its own point', async () => {
      const author = await t.createUser();
      const post = await d.createPost(author);
      await d.react(alice, 'post', post, author.uuid);
      await d.react(bob, 'post', post, author.uuid);
      assert.equal(await storedKarma(t, author.uuid), 4);
      await d.unreact(alice, 'post', post, author.uuid);
      assert.equal(await storedKarma(t, author.uuid), 3);
      await d.deletePost(author, post);
      assert.equal(await storedKarma(t, author.uuid), await ledgerSum(t, author.uuid));
      await assertConsistent();
    });

    it("a deleted user's reactions are taken back from the authors they paid, with emotionRemoved", async () => {
      const author = await t.createUser();
      const leaving = await t.createUser();
      const post = await d.createPost(author);
      const comment = await d.createComment(author, post);
      await d.react(leaving, 'post', post, author.uuid, 'like');
      await d.react(leaving, 'comment', comment, author.uuid, 'love');
      await d.react(bob, 'post', post, author.uuid, 'like');
      assert.equal(await storedKarma(t, author.uuid), 6);

      const res = await t.inject({
        method: 'POST',
        url: `/users/${leaving.uuid}/delete`,
        token: leaving.token,
      });
      assert.equal(res.statusCode, 200, res.body);
      // The post and comment grants stay, as does bob's reaction; the leaving user's two points go.
      assert.equal(await storedKarma(t, author.uuid), 4);
      const removed = (await ledger(t, author.uuid)).filter((r) => r.event === 'emotionRemoved');
      assert.deepEqual(
        removed.map((r) => [r.karma_type, Number(r.points), r.target_uuid, r.target_type]).sort(),
        [
          ['subtract', 1, comment, 'comment'],
          ['subtract', 1, post, 'post'],
        ].sort(),
      );
      const karma = await t.inject({ method: 'GET', url: `/users/${author.uuid}`, token: author.token });
      assert.equal(body(karma).data.karma, 4);
      await assertConsistent();
    });

    it('reacting to one own content earns nothing, and removing that reaction writes nothing', async () => {
      const u = await t.createUser();
      const post = await d.createPost(u);
      await d.react(u, 'post', post, u.uuid);
      assert.equal(await storedKarma(t, u.uuid), 2);
      await d.unreact(u, 'post', post, u.uuid);
      assert.deepEqual(
        (await ledger(t, u.uuid)).map((r) => r.event),
        ['postCreated'],
      );
      assert.equal(await storedKarma(t, u.uuid), 2);
    });

    it('deleting a source whose record was edited down subtracts only what it still nets', async () => {
      const u = await t.createUser();
      const post = await d.createPost(u);
      const [record] = await ledger(t, u.uuid);
      const res = await t.inject({
        method: 'POST',
        url: `/karma/${record?.uuid}/update`,
        token: u.token,
        payload: {
          event: 'postCreated',
          target_uuid: post,
          target_type: 'post',
          karma_type: 'add',
          points: 1,
        },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(await storedKarma(t, u.uuid), 1);
      await d.deletePost(u, post);
      const rows = await ledger(t, u.uuid);
      assert.deepEqual(
        rows.map((r) => [r.event, r.karma_type, Number(r.points)]),
        [
          ['postCreated', 'add', 1],
          ['postDeleted', 'subtract', 1],
        ],
      );
      assert.equal(await storedKarma(t, u.uuid), 0);
    });

    it('deleting a source whose record the owner deleted writes nothing', async () => {
      const u = await t.createUser();
      const post = await d.createPost(u);
      const [record] = await ledger(t, u.uuid);
      const res = await t.inject({ method: 'POST', url: `/karma/${record?.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 200);
      await d.deletePost(u, post);
      assert.deepEqual(await ledger(t, u.uuid), []);
      assert.equal(await storedKarma(t, u.uuid), 0);
    });
  });

  describe(`karma daily cap and KARMA_RULES [${dialect.name}]`, () => {
    let t: TestApp;
    let d: KarmaDriver;
    before(async () => {
      const path = rulesFile(`cap-${dialect.name}.json`, {
        daily_cap: 3,
        rules: { postCreated: { points: 4 }, commentCreated: { daily_cap: null } },
      });
      t = await startTestApp(dialect, { KARMA_RULES: path });
      d = new KarmaDriver(t);
    });
    after(async () => t?.close());

    it('past the daily cap, records are still written but with 0 points', async () => {
      const u = await t.createUser();
      const posts: string[] = [];
      for (let i = 0; i < 5; i++) posts.push(await d.createPost(u, `post ${i}`));
      const rows = await ledger(t, u.uuid);
      assert.deepEqual(
        rows.map((r) => Number(r.points)),
        [4, 4, 4, 0, 0],
      );
      assert.equal(await storedKarma(t, u.uuid), 12);
      // The cap is per rule: comments here have none.
      const other = await t.createUser();
      for (let i = 0; i < 5; i++) await d.createComment(other, posts[0] as string);
      assert.equal(await storedKarma(t, other.uuid), 5);
      // Deleting a post that earned 0 points writes no compensation; one that earned 4 takes 4 back.
      await d.deletePost(u, posts[4] as string);
      await d.deletePost(u, posts[1] as string);
      const after = await ledger(t, u.uuid);
      assert.deepEqual(
        after
          .filter((r) => r.karma_type === 'subtract')
          .map((r) => [r.event, Number(r.points), r.target_uuid]),
        [['postDeleted', 4, posts[1]]],
      );
      assert.equal(await storedKarma(t, u.uuid), 8);
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });

    it('the rules file sets the ceiling of an update', async () => {
      const u = await t.createUser();
      await d.createPost(u);
      const [record] = await ledger(t, u.uuid);
      const post = record?.target_uuid as string;
      const update = (points: number) =>
        t.inject({
          method: 'POST',
          url: `/karma/${record?.uuid}/update`,
          token: u.token,
          payload: {
            event: 'postCreated',
            target_uuid: post,
            target_type: 'post',
            karma_type: 'add',
            points,
          },
        });
      assert.equal((await update(5)).statusCode, 400);
      assert.equal((await update(4)).statusCode, 200);
    });

    it('renaming a paying record frees no place under the cap: the next post past it still earns 0', async () => {
      const u = await t.createUser();
      const other = await t.createUser();
      const network = await d.createNetwork(other);
      for (let i = 0; i < 3; i++) await d.createPost(u, `capped ${i}`);
      assert.equal(await storedKarma(t, u.uuid), 12);
      const paying = (await ledger(t, u.uuid)).filter((r) => Number(r.points) > 0);
      // One as written before migration 0023, with no rule: an edit pins it before renaming its event.
      await t.ctx.db
        .updateTable('karma')
        .set({ rule: null })
        .where('uuid', '=', paying[1]?.uuid as string)
        .execute();
      // Kept an `add` at its value (or lowered to what the new event allows), under the compensation's name or
      // another rule's: without the rule it was written by, each took its record out of the day's count.
      const renames = [
        { event: 'postDeleted', target_uuid: paying[0]?.target_uuid, target_type: 'post', points: 4 },
        { event: 'networkCreated', target_uuid: network, target_type: 'network', points: 4 },
        { event: 'commentDeleted', target_uuid: paying[2]?.target_uuid, target_type: 'post', points: 1 },
      ];
      for (const [i, rename] of renames.entries()) {
        const res = await t.inject({
          method: 'POST',
          url: `/karma/${paying[i]?.uuid}/update`,
          token: u.token,
          payload: { ...rename, karma_type: 'add' },
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(body(res).data.event, rename.event);
      }
      await d.createPost(u, 'past the cap');
      const rows = await ledger(t, u.uuid);
      assert.equal(Number(rows.at(-1)?.points), 0, 'the fourth post of the day earns nothing');
      assert.equal(await storedKarma(t, u.uuid), 9);
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });
  });
}

describe(`KARMA_RULES validation at start`, () => {
  const bad: [string, unknown][] = [
    ['not-json.json', '{ nope'],
    ['unknown-rule.json', { rules: { postLiked: { points: 1 } } }],
    ['negative.json', { rules: { postCreated: { points: -1 } } }],
    ['fraction.json', { daily_cap: 2.5 }],
    ['unknown-key.json', { cap: 3 }],
  ];
  for (const [name, content] of bad) {
    it(`a bad rules file (${name}) stops the start with a message naming KARMA_RULES`, async () => {
      const path = rulesFile(`bad-${name}`, content);
      const config = loadConfig(
        {},
        { DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', KARMA_RULES: path },
      );
      await assert.rejects(buildApp(config, { logger: false }), (err: Error) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, /KARMA_RULES/);
        return true;
      });
    });
  }
});
