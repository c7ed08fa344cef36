import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkAssociationAudiences } from '../../src/modules/tag-association/tag-association.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost } from '../tags/support.ts';

// A post made private while others comment on it and react to it (found by a review): on PostgreSQL the edit's
// triggers copied the new visibility onto the comments and associations they could see, while comments and
// reactions in flight were written with the old one; the post's comments then stayed searchable by anyone and their
// hashtags listed to everyone.

for (const dialect of testDialects()) {
  describe(`changing a post's visibility while others write to it [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    const others: TestUser[] = [];

    before(async () => {
      t = await startTestApp(dialect);
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
  });
}
