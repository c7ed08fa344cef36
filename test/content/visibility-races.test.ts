import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { checkAssociationAudiences } from '../../src/modules/tag-association/tag-association.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, findTag } from '../tags/support.ts';

// A post made private while others comment on it and react to it (found by a review): on PostgreSQL the edit's
// triggers copied the new visibility onto the comments and associations they could see, while comments and
// reactions in flight were written with the old one; the post's comments then stayed searchable by anyone and their
// hashtags listed to everyone.

/** Waits until a request of the app waits for a row lock (PostgreSQL), so the holder commits under it, not before. */
async function waitForLockWait(t: TestApp): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const waiting = await sql<{ n: string }>`
      select count(*) as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(t.ctx.db);
    if (Number(waiting.rows[0]?.n) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no request came to wait for the row lock in 5 s');
}

type Answer = Awaited<ReturnType<TestApp['inject']>>;

/**
 * Sends `request` while the post's author makes the post private as the post service does (the post locked, then
 * updated), and commits once the request waits for that lock: its answer is the one after the edit.
 */
async function sendWhileMadePrivate(
  t: TestApp,
  post: string,
  request: () => Promise<Answer>,
): Promise<Answer> {
  let answer: Promise<Answer> | undefined;
  await t.ctx.db.transaction().execute(async (trx) => {
    await sql`select uuid from posts where uuid = ${post} for update`.execute(trx);
    await sql`update posts set visibility = 'private' where uuid = ${post}`.execute(trx);
    answer = request();
    await waitForLockWait(t);
  });
  return answer as Promise<Answer>;
}

for (const dialect of testDialects()) {
  describe(`changing a post's visibility while others write to it [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    const others: TestUser[] = [];

    before(async () => {
      t = await startTestApp(dialect, {
        ENABLED_OPERATIONS: ['tag-associations.create', 'tag-associations.delete', 'tag-associations.update'],
      });
      author = await t.createUser();
      for (let i = 0; i < 4; i++) others.push(await t.createUser());
    });
    after(async () => t?.close());

    it('leaves no comment or association with the old audience', async () => {
      for (let round = 0; round < 4; round++) {
        const word = `hushword${round}q`;
        const post = await createPost(t, author, `round ${round} out in the open`);
        const answers = await Promise.all([
          ...others.map((u, i) =>
            t.inject({
              method: 'POST',
              url: `/posts/${post}/comments`,
              token: u.token,
              payload: { body: `${word} comment ${i} #${word}` },
            }),
          ),
          t.inject({
            method: 'POST',
            url: `/posts/${post}/update`,
            token: author.token,
            payload: { visibility: 'private' },
          }),
          ...others.map((u) =>
            t.inject({
              method: 'POST',
              url: `/posts/${post}/emotions`,
              token: u.token,
              payload: { name: 'love' },
            }),
          ),
        ]);
        for (const a of answers) assert.ok([200, 201, 404].includes(a.statusCode), a.body);
        assert.deepEqual(await checkAssociationAudiences(t.ctx.db, 100), [], `round ${round}`);
        // The post is private now: nobody but its author finds the comments under it, or their hashtag.
        for (const token of [t.guest, others[0]?.token as string]) {
          const found = await t.inject({
            method: 'GET',
            url: `/search?query=${word}`,
            token,
            headers: { 'cache-control': 'no-cache' },
          });
          assert.equal(found.statusCode, 200, found.body);
          assert.deepEqual(body(found).data, [], `round ${round}: ${found.body}`);
        }
      }
    });

    it("leaves no hashtag of a comment edited meanwhile with the post's old audience", async () => {
      for (let round = 0; round < 4; round++) {
        const word = `editword${round}q`;
        const post = await createPost(t, author, `edit round ${round} out in the open`);
        const comments: [TestUser, string][] = [];
        for (const u of others) {
          const made = await t.inject({
            method: 'POST',
            url: `/posts/${post}/comments`,
            token: u.token,
            payload: { body: 'plain words' },
          });
          comments.push([u, body(made).data.uuid]);
        }
        const answers = await Promise.all([
          ...comments.map(([u, comment], i) =>
            t.inject({
              method: 'POST',
              url: `/comments/${comment}/update`,
              token: u.token,
              payload: { body: `edited ${i} #${word}` },
            }),
          ),
          t.inject({
            method: 'POST',
            url: `/posts/${post}/update`,
            token: author.token,
            payload: { visibility: 'private' },
          }),
        ]);
        for (const a of answers) assert.ok([200, 404].includes(a.statusCode), a.body);
        assert.deepEqual(await checkAssociationAudiences(t.ctx.db, 100), [], `round ${round}`);
        const listed = await t.inject({ method: 'GET', url: `/tags?filterby[name]=${word}`, token: t.guest });
        assert.equal(body(listed).count.total, 0, `round ${round}: ${listed.body}`);
      }
    });

    it("refuses a comment's deletion once an edit committing meanwhile made its post private to the commenter", {
      skip: dialect.name !== 'postgres' && 'a held row lock needs a second writer (PostgreSQL)',
    }, async () => {
      const commenter = others[0] as TestUser;
      const post = await createPost(t, author, 'soon private');
      const made = await t.inject({
        method: 'POST',
        url: `/posts/${post}/comments`,
        token: commenter.token,
        payload: { body: 'a comment to delete' },
      });
      const comment = body(made).data.uuid as string;
      // The deletion's owner check reads the committed post, still public, before the edit commits.
      const answer = await sendWhileMadePrivate(t, post, () =>
        t.inject({ method: 'POST', url: `/comments/${comment}/delete`, token: commenter.token }),
      );
      assert.equal(answer.statusCode, 404, answer.body);
      const kept = await t.ctx.db.selectFrom('comments').select('uuid').where('uuid', '=', comment).execute();
      assert.equal(kept.length, 1, 'the comment is kept');
    });

    it('answers a reaction taken back while an edit made the post private as after the edit: 404', {
      skip: dialect.name !== 'postgres' && 'a held row lock needs a second writer (PostgreSQL)',
    }, async () => {
      const reactor = others[1] as TestUser;
      const post = await createPost(t, author, 'soon private too');
      const reacted = await t.inject({
        method: 'POST',
        url: `/posts/${post}/emotions`,
        token: reactor.token,
        payload: { name: 'love' },
      });
      assert.equal(reacted.statusCode, 201, reacted.body);
      const answer = await sendWhileMadePrivate(t, post, () =>
        t.inject({ method: 'POST', url: `/posts/${post}/emotions/love/delete`, token: reactor.token }),
      );
      assert.equal(answer.statusCode, 404, answer.body);
    });

    it("refuses a tag association's deletion and update once an edit made its target private to their caller", {
      skip: dialect.name !== 'postgres' && 'a held row lock needs a second writer (PostgreSQL)',
    }, async () => {
      const tagger = others[2] as TestUser;
      const post = await createPost(t, author, 'tagged soon private #racetagone');
      // The update's new tag stays visible whatever becomes of the post: it has a public use elsewhere.
      await createPost(t, author, 'staying public #racetagtwo');
      const [one, two] = await Promise.all(
        ['racetagone', 'racetagtwo'].map((name) => findTag(t, 'hashtag', name)),
      );
      const made = await t.inject({
        method: 'POST',
        url: '/tag-association',
        token: tagger.token,
        payload: { tag_uuid: one.uuid, target_uuid: post, target_type: 'post' },
      });
      assert.equal(made.statusCode, 201, made.body);
      const association = body(made).data.uuid as string;
      // The owner checks read the committed audience, still public, before the edit commits.
      const deleted = await sendWhileMadePrivate(t, post, () =>
        t.inject({ method: 'DELETE', url: `/tag-associations/${association}`, token: tagger.token }),
      );
      assert.equal(deleted.statusCode, 404, deleted.body);
      await t.inject({
        method: 'POST',
        url: `/posts/${post}/update`,
        token: author.token,
        payload: { visibility: 'public' },
      });
      const updated = await sendWhileMadePrivate(t, post, () =>
        t.inject({
          method: 'PATCH',
          url: `/tag-associations/${association}`,
          token: tagger.token,
          payload: { tag_uuid: two.uuid },
        }),
      );
      assert.equal(updated.statusCode, 404, updated.body);
      const kept = await t.ctx.db
        .selectFrom('tag_associations')
        .select('tag_uuid')
        .where('uuid', '=', association)
        .execute();
      assert.deepEqual(kept, [{ tag_uuid: one.uuid }], 'the association is kept, on its first tag');
    });
  });
}
