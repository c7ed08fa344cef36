import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { checkKarmaTotals } from '../../src/modules/karma/karma.service.ts';
import { openMediaFile } from '../../src/modules/media/media.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { KarmaDriver } from '../karma/support.ts';
import { createComment, createPost } from '../tags/support.ts';

// Writes racing each other on one item (found by a review). On PostgreSQL an edit read its row unlocked, so a delete
// committing meanwhile left the edit re-syncing hashtags of an item that was gone; a tag rename racing its delete
// answered 500; a reaction whose key was taken by one taken back at once paid its author for a row never stored.

const ROUNDS = 6;

/** How many tag associations point at a post or comment that no longer exists. */
async function orphanAssociations(t: TestApp): Promise<number> {
  const r = await sql<{ n: number | string }>`
    select count(*) as n from tag_associations ta
    where (ta.target_type = 'post' and not exists (select 1 from posts p where p.uuid = ta.target_uuid))
       or (ta.target_type = 'comment' and not exists (select 1 from comments c where c.uuid = ta.target_uuid))`.execute(
    t.ctx.db,
  );
  return Number(r.rows[0]?.n);
}

/** How many sources still net points for someone though the comment or association behind them is gone. */
async function pointsFromNothing(t: TestApp): Promise<number> {
  const r = await sql<{ n: number | string }>`
    select count(*) as n from (
      select k.source_uuid from karma k
      where k.source_uuid in (select g.source_uuid from karma g where g.event in ('commentCreated', 'emotionReceived'))
        and not exists (select 1 from comments c where c.uuid = k.source_uuid)
        and not exists (select 1 from tag_associations ta where ta.uuid = k.source_uuid)
      group by k.user_uuid, k.source_uuid
      having sum(case when k.karma_type = 'add' then k.points else -k.points end) <> 0) s`.execute(t.ctx.db);
  return Number(r.rows[0]?.n);
}

for (const dialect of testDialects()) {
  describe(`writes racing on one item [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    let reader: TestUser;
    let admin: TestUser;

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'] });
      author = await t.createUser();
      reader = await t.createUser();
      admin = await t.createUser(undefined, 'admin');
    });
    after(async () => t?.close());

    const post = (user: TestUser, url: string, payload: object = {}) =>
      t.inject({ method: 'POST', url, token: user.token, payload });

    it('an edit racing a delete answers 200 or 404 and re-syncs no hashtag of a gone post or comment', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const p = await createPost(t, author, `round ${round}`);
        const c = await createComment(t, author, p, `comment ${round}`);
        const answers = await Promise.all([
          post(author, `/posts/${p}/update`, { body: `edited #racingedit${round}` }),
          post(author, `/comments/${c}/update`, { body: `edited #racingedit${round}` }),
          post(author, `/posts/${p}/delete`),
        ]);
        for (const a of answers.slice(0, 2)) assert.ok([200, 404].includes(a.statusCode), a.body);
        assert.equal(answers[2]?.statusCode, 200, answers[2]?.body);
        assert.equal(await orphanAssociations(t), 0, `round ${round}`);
      }
      for (let round = 0; round < ROUNDS; round++) {
        const created = await post(author, '/networks', { name: `racing net ${round}` });
        const n = body(created).data.uuid;
        const [renamed, deleted] = await Promise.all([
          post(author, `/networks/${n}/update`, { name: `renamed ${round}` }),
          post(author, `/networks/${n}/delete`),
        ]);
        assert.ok([200, 404].includes(renamed.statusCode), renamed.body);
        assert.equal(deleted.statusCode, 200, deleted.body);
      }
    });

    it('a tag rename racing its delete answers 200 or 404, never 500', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const made = await post(admin, '/tags/create', { name: `racingtag${round}`, tag_type: 'hashtag' });
        assert.equal(made.statusCode, 201, made.body);
        const tag = body(made).data.uuid;
        const [renamed, deleted] = await Promise.all([
          t.inject({
            method: 'PUT',
            url: `/tags/${tag}/update`,
            token: admin.token,
            payload: { name: `racingtagnew${round}`, tag_type: 'hashtag' },
          }),
          post(admin, `/tags/${tag}/delete`),
        ]);
        assert.ok([200, 404].includes(renamed.statusCode), renamed.body);
        assert.equal(deleted.statusCode, 200, deleted.body);
      }
    });

    it('reacting twice while taking the reaction back pays only for reactions that are stored', async () => {
      const p = await createPost(t, author, 'react to me');
      for (let round = 0; round < ROUNDS * 2; round++) {
        const answers = await Promise.all([
          post(reader, `/posts/${p}/emotions`, { name: 'love' }),
          post(reader, `/posts/${p}/emotions`, { name: 'love' }),
          post(reader, `/posts/${p}/emotions/love/delete`),
        ]);
        for (const a of answers) assert.ok([200, 201, 404].includes(a.statusCode), a.body);
        // Whatever a reaction answered names a row that exists, unless the take-back came after it.
        await post(reader, `/posts/${p}/emotions/love/delete`);
        assert.equal(await pointsFromNothing(t), 0, `round ${round}`);
      }
      assert.deepEqual((await checkKarmaTotals(t.ctx.db)).mismatches, []);
    });

    it('a download opened before a delete still reads the whole file', async () => {
      const media = await new KarmaDriver(t).createMedia(author);
      const file = await openMediaFile(t.ctx, media, author.uuid);
      const deleted = await post(author, `/media/${media}/delete`);
      assert.equal(deleted.statusCode, 200, deleted.body);
      const chunks: Buffer[] = [];
      for await (const chunk of file.stream) chunks.push(chunk as Buffer);
      const bytes = Buffer.concat(chunks);
      assert.equal(bytes.length, file.size);
      assert.deepEqual([...bytes.subarray(1, 4)], [...Buffer.from('PNG')]);
      const gone = await t.inject({ method: 'GET', url: `/media/${media}/file`, token: author.token });
      assert.equal(gone.statusCode, 404, gone.body);
    });
  });
}
