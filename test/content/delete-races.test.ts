import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend } from '../search/world.ts';
import { createPost } from '../tags/support.ts';

// A post deleted while others comment on it and react to it (found by a review): on PostgreSQL the delete read the
// post's comments and reactions before those writes committed, and its final DELETE then removed the new comments
// by cascade without their events. Their hashtag associations and the reactions were left pointing at nothing, and
// the points they had given were never taken back.

for (const dialect of testDialects()) {
  describe(`deleting content while others write to it [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    const others: TestUser[] = [];

    before(async () => {
      t = await startTestApp(dialect);
      author = await t.createUser();
      for (let i = 0; i < 4; i++) others.push(await t.createUser());
    });
    after(async () => t?.close());

    it('leaves no association of a deleted post or comment behind, and no points they gave', async () => {
      for (let round = 0; round < 3; round++) {
        const post = await createPost(t, author, `round ${round} #racing`);
        const answers = await Promise.all([
          t.inject({ method: 'POST', url: `/posts/${post}/delete`, token: author.token }),
          ...others.map((u, i) =>
            t.inject({
              method: 'POST',
              url: `/posts/${post}/comments`,
              token: u.token,
              payload: { body: `comment ${i} #racing${round}` },
            }),
          ),
          ...others.map((u) =>
            t.inject({
              method: 'POST',
              url: `/posts/${post}/emotions`,
              token: u.token,
              payload: { name: 'love' },
            }),
          ),
        ]);
        assert.equal(answers[0]?.statusCode, 200);
        for (const a of answers) assert.ok(a.statusCode < 500, a.body);
        // Every association points at an item that exists.
        const orphans = await sql<{ n: number | string }>`
          select count(*) as n from tag_associations ta
          where (ta.target_type = 'post' and not exists (select 1 from posts p where p.uuid = ta.target_uuid))
             or (ta.target_type = 'comment' and not exists (select 1 from comments c where c.uuid = ta.target_uuid))
        `.execute(t.ctx.db);
        assert.equal(Number(orphans.rows[0]?.n), 0, `round ${round}: associations of deleted items`);
        // Every stored total equals its ledger, and nothing nets points from an item that is gone.
        const totals = await sql<{ n: number | string }>`
          select count(*) as n from users u
          where u.karma <> (select coalesce(sum(case when k.karma_type = 'add' then k.points else -k.points end), 0)
            from karma k where k.user_uuid = u.uuid)`.execute(t.ctx.db);
        assert.equal(Number(totals.rows[0]?.n), 0, `round ${round}: totals off their ledgers`);
        const netting = await sql<{ n: number | string }>`
          select count(*) as n from (
            select k.source_uuid from karma k
            where k.source_uuid in (
                select g.source_uuid from karma g where g.event in ('commentCreated', 'emotionReceived'))
              and not exists (select 1 from comments c where c.uuid = k.source_uuid)
              and not exists (select 1 from tag_associations ta where ta.uuid = k.source_uuid)
            group by k.user_uuid, k.source_uuid
            having sum(case when k.karma_type = 'add' then k.points else -k.points end) <> 0) s`.execute(
          t.ctx.db,
        );
        assert.equal(Number(netting.rows[0]?.n), 0, `round ${round}: points left from deleted items`);
        const gone = await t.inject({ method: 'GET', url: `/posts/${post}`, token: author.token });
        assert.equal(gone.statusCode, 404, body(gone).error?.code);
      }
    });

    it('leaves no mention of a user deleted while others mention them, and deadlocks on none', async () => {
      const deadlocks = async () =>
        dialect.name === 'postgres'
          ? Number(
              (
                await sql<{ n: number | string }>`select pg_stat_clear_snapshot(), deadlocks as n
                  from pg_stat_database where datname = current_database()`.execute(t.ctx.db)
              ).rows[0]?.n,
            )
          : 0;
      // Deadlocks of the test before (broken and retried) are counted a moment after they happen.
      await new Promise((r) => setTimeout(r, 1_500));
      const before = await deadlocks();
      for (let round = 0; round < 3; round++) {
        const name = `leaving_${round}_${Date.now() % 100_000}`;
        const leaving = await t.createUser(name);
        // A friend of theirs mentions them (the deletion compensates the friendship, locking the friend's row, which
        // the friend's post holds for its grant), and the others comment on a post of theirs (the deletion locks it,
        // and each comment holds a key share of it): a mention that waited for the deletion deadlocked.
        await befriend(t, others[0] as TestUser, leaving);
        const own = await createPost(t, leaving, `round ${round}`);
        const answers = await Promise.all([
          t.inject({ method: 'POST', url: `/users/${leaving.uuid}/delete`, token: leaving.token }),
          ...others.map((u, i) =>
            t.inject({
              method: 'POST',
              url: '/posts',
              token: u.token,
              payload: { body: `${i} hi @${name}` },
            }),
          ),
          // Not the friend: its comment would grant it points while holding the post the deletion locks after
          // the friendship, a deadlock of their own that PostgreSQL breaks and the transaction retries
          // (docs/reliability.md).
          ...others.slice(1).map((u, i) =>
            t.inject({
              method: 'POST',
              url: `/posts/${own}/comments`,
              token: u.token,
              payload: { body: `${i} thanks @${name}` },
            }),
          ),
        ]);
        assert.equal(answers[0]?.statusCode, 200, answers[0]?.body);
        for (const a of answers) assert.ok(a.statusCode < 500, a.body);
        const left = await sql<{ n: number | string }>`
          select count(*) as n from tag_associations ta join tags tg on tg.uuid = ta.tag_uuid
          where tg.tag_type = 'mention' and tg.name_key = ${name}`.execute(t.ctx.db);
        assert.equal(Number(left.rows[0]?.n), 0, `round ${round}: mentions of a deleted user`);
      }
      // PostgreSQL reports deadlocks it broke (RetryingKysely then ran the transaction again) a moment later.
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(await deadlocks(), before, 'no writer and deletion waited on each other');
    });
  });
}
