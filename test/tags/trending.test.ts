import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { createComment, createPost, findTag, get } from './support.ts';

const HOUR = 3_600_000;

for (const dialect of testDialects()) {
  describe(`trending hashtags [${dialect.name}]`, () => {
    let t: TestApp;
    let old = '';
    let recentHotUse = '';
    before(async () => {
      t = await startTestApp(dialect);
      const [a, b, c] = [await t.createUser(), await t.createUser(), await t.createUser()];
      if (!a || !b || !c) throw new Error('users');
      const p = await createPost(t, a, `#Hot news @${b.username}`);
      await createPost(t, b, 'so #hot');
      await createComment(t, c, p, 'really #HOT');
      await createPost(t, a, '#warm one');
      await createPost(t, a, '#warm two');
      for (const u of [a, b, c]) await createPost(t, u, '#secret', { visibility: 'private' });
      await t.inject({
        method: 'POST',
        url: `/posts/${p}/emotions`,
        token: c.token,
        payload: { name: 'like' },
      });
      // One use of #hot moves 30 hours back, out of the default window.
      const hot = await findTag(t, 'hashtag', 'hot');
      old = new Date(Date.now() - 30 * HOUR).toISOString();
      // The use of #hot by a user (each made one).
      const hotUseOf = async (user: string) =>
        (
          await t.ctx.db
            .selectFrom('tag_associations')
            .select('uuid')
            .where('tag_uuid', '=', hot.uuid)
            .where('user_uuid', '=', user)
            .executeTakeFirstOrThrow()
        ).uuid;
      await stampUse(await hotUseOf(c.uuid), old);
      recentHotUse = await hotUseOf(b.uuid);
    });
    after(async () => t?.close());

    /** Sets when a tag association was made. */
    const stampUse = async (uuid: string, createdAt: string) => {
      await t.ctx.db
        .updateTable('tag_associations')
        .set({ created_at: createdAt })
        .where('uuid', '=', uuid)
        .execute();
    };

    it('ranks hashtags of public content by distinct users in the last 24 hours', async () => {
      const b = await get(t, '/tags/trending');
      assert.deepEqual(
        b.data.map((x: { name: string; users: number; uses: number }) => [x.name, x.users, x.uses]),
        [
          ['Hot', 2, 2],
          ['warm', 1, 2],
        ],
      );
      const hot = b.data[0];
      assert.equal(hot.type, 'tag');
      assert.equal(hot.tag_type, 'hashtag');
      assert.equal(hot.hours.length, 24);
      const now = new Date();
      now.setUTCMinutes(0, 0, 0);
      // The test may cross an hour boundary between writing and reading: the newest bucket is this hour or the next.
      assert.ok(Date.parse(hot.hours[23].hour) >= now.getTime() - HOUR);
      assert.match(hot.hours[0].hour, /T\d{2}:00:00\.000Z$/);
      assert.equal(
        hot.hours.reduce((s: number, h: { uses: number }) => s + h.uses, 0),
        2,
      );
    });

    it('takes a window of 1 to 168 hours and a limit up to 50', async () => {
      const wide = await get(t, '/tags/trending?window=48&limit=1');
      assert.equal(wide.data.length, 1);
      const hot = wide.data[0];
      assert.equal(hot.users, 3);
      assert.equal(hot.hours.length, 48);
      const oldHour = `${old.slice(0, 13)}:00:00.000Z`;
      const bucket = hot.hours.find((h: { hour: string }) => h.hour === oldHour);
      assert.equal(bucket?.uses, 1, 'the old use sits 30 hours back');
      // The one-hour window is the current UTC hour alone: the uses written in `before` fall out of it when the hour
      // turns after them (CI once crossed 12:00 between the two). One use is stamped now and read at once, again if
      // the hour turned in between.
      let narrow: Awaited<ReturnType<typeof get>>;
      for (;;) {
        const hour = Math.floor(Date.now() / HOUR);
        await stampUse(recentHotUse, new Date().toISOString());
        narrow = await get(t, '/tags/trending?window=1');
        if (Math.floor(Date.now() / HOUR) === hour) break;
      }
      assert.equal(narrow.data[0]?.name, 'Hot');
      for (const tag of narrow.data) assert.equal(tag.hours.length, 1, tag.name);
      for (const q of ['window=0', 'window=169', 'limit=51', 'limit=0', 'window=abc', 'language=en']) {
        const res = await t.inject({ method: 'GET', url: `/tags/trending?${q}`, token: t.guest });
        assert.equal(res.statusCode, 400, q);
        assert.equal(body(res).error.code, 'invalid_request');
      }
      const noToken = await t.inject({ method: 'GET', url: '/tags/trending' });
      assert.equal(noToken.statusCode, 401);
    });
  });
}
