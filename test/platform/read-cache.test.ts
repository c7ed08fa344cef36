import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import {
  registerDirectVersionReader,
  SharedVersionReads,
  TurnSharedReads,
  type Versions,
} from '../../src/db/exact-cache.ts';
import { body, injectWithToken, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, findTag } from '../tags/support.ts';

/** Waits until the wall clock is in the next whole second (answers carry the time in seconds). */
async function nextSecond(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
}

/** A JSON answer without its timestamp, which changes every second. */
function withoutTimestamp(text: string): unknown {
  const { timestamp: _t, ...rest } = JSON.parse(text);
  return rest;
}

// The exact read caches (src/db/exact-cache.ts) of token checks and single tags: whatever was read before, the
// next request after any commit (by this process or another, as with WORKERS=2) sees that commit.
for (const dialect of testDialects()) {
  describe(`exact read cache of tokens and tags [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let other: Awaited<ReturnType<typeof buildApp>>;
    let otherHandle: ReturnType<typeof connectDatabase>;

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      // A second app on its own connections to the same database: another process.
      otherHandle = connectDatabase(t.url, { synchronous: 'NORMAL', poolSize: 2, readers: 0 });
      const config = loadConfig({}, { DATABASE_URL: t.url, LOG_LEVEL: 'silent' });
      other = await buildApp(config, { handle: otherHandle, skipMigrations: true, logger: false });
    });
    after(async () => {
      await other?.app.close();
      await otherHandle?.db.destroy();
      await t?.close();
    });

    const me = (token: string) => t.inject({ method: 'GET', url: '/me', token });

    it('a token revoked by another process is refused by the next request', async () => {
      const login = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'password',
          username: alice.username,
          password: alice.password,
          client_id: t.client.id,
          client_secret: t.client.secret,
        },
      });
      const token = body(login).access_token as string;
      assert.equal((await me(token)).statusCode, 200);
      assert.equal((await me(token)).statusCode, 200, 'answered from the cache the second time');
      const revoke = await other.app.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { token, client_id: t.client.id, client_secret: t.client.secret },
      });
      assert.equal(revoke.statusCode, 200);
      const refused = await me(token);
      assert.equal(refused.statusCode, 401);
      assert.equal(body(refused).error.code, 'unauthenticated');
    });

    it('a token expires on time although its check was cached', async () => {
      const shortLived = await startTestApp(dialect, { ACCESS_TOKEN_TTL_SECONDS: 1 });
      try {
        const user = await shortLived.createUser();
        const ask = () => shortLived.inject({ method: 'GET', url: '/me', token: user.token });
        assert.equal((await ask()).statusCode, 200);
        await new Promise((r) => setTimeout(r, 1100));
        assert.equal((await ask()).statusCode, 401);
      } finally {
        await shortLived.close();
      }
    });

    it("a tag's answer follows a post made private by another process at once", async () => {
      const stranger = await t.createUser();
      const post = await createPost(t, alice, 'caching is hard #cachetag');
      const tag = await findTag(t, 'hashtag', 'cachetag');
      const read = async (fresh = false) =>
        t.inject({
          method: 'GET',
          url: `/tags/${tag.uuid}`,
          token: stranger.token,
          ...(fresh ? { headers: { 'cache-control': 'no-cache' } } : {}),
        });
      assert.equal((await read()).statusCode, 200);
      assert.deepEqual(
        body(await read()).data,
        body(await read(true)).data,
        'cached and fresh answers agree',
      );
      const update = await injectWithToken(other.app, {
        method: 'POST',
        url: `/posts/${post}/update`,
        token: alice.token,
        payload: { visibility: 'private' },
      });
      assert.equal(update.statusCode, 200, update.body);
      // The hashtag's only use is private now: for the stranger the tag does not exist.
      assert.equal((await read()).statusCode, 404);
      const own = await t.inject({ method: 'GET', url: `/tags/${tag.uuid}`, token: alice.token });
      assert.equal(own.statusCode, 200);
      assert.equal(body(own).data.associations.length, 1);
    });

    it('sends a cached answer as the fresh one would be, with the timestamp of its sending', async () => {
      await createPost(t, alice, 'rendered once #renderedtag');
      const tag = await findTag(t, 'hashtag', 'renderedtag');
      for (const url of [
        `/tags/${tag.uuid}`,
        '/tags?filterby[tag_type]=hashtag&sortby[associations_count]=desc&sortby[created_at]=asc&limit=5',
        `/tag-associations?filterby[tag_uuid]=${tag.uuid}&limit=5`,
      ]) {
        const first = await t.inject({ method: 'GET', url, token: alice.token });
        assert.equal(first.statusCode, 200, first.body);
        await nextSecond();
        const cached = await t.inject({ method: 'GET', url, token: alice.token });
        const fresh = await t.inject({
          method: 'GET',
          url,
          token: alice.token,
          headers: { 'cache-control': 'no-cache' },
        });
        for (const res of [cached, fresh]) {
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
          assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
          assert.equal(res.headers['cache-control'], 'no-store');
        }
        assert.deepEqual(withoutTimestamp(cached.body), withoutTimestamp(first.body), url);
        assert.deepEqual(withoutTimestamp(fresh.body), withoutTimestamp(first.body), url);
        assert.ok(
          body(cached).timestamp > body(first).timestamp,
          `${url}: a cached answer carries the time it was sent, not the time it was computed`,
        );
        assert.equal(body(cached).status, 'OK');
      }
    });
  });

  // Token checks are kept under the auth version (migration 0021): its triggers must see every change a check reads,
  // whoever makes it, and nothing else.
  describe(`token checks under the auth version [${dialect.name}]`, () => {
    let t: TestApp;
    let byHand: ReturnType<typeof connectDatabase>;

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['tags.delete'] });
      // SQL by hand on connections of its own: an operator's psql or sqlite3.
      byHand = connectDatabase(t.url, { synchronous: 'NORMAL', poolSize: 1, readers: 0 });
    });
    after(async () => {
      await byHand?.db.destroy();
      await t?.close();
    });

    const authVersion = async () =>
      Number(
        (await sql<{ n: number }>`select n from auth_version where id = 1`.execute(byHand.db)).rows[0]?.n,
      );

    it('content writes leave the auth version as it was', async () => {
      const user = await t.createUser();
      const before = await authVersion();
      await createPost(t, user, 'nothing about tokens #authversion');
      const post = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'again' },
      });
      assert.equal(post.statusCode, 201);
      assert.equal(await authVersion(), before);
    });

    it('a role, a client and a token changed in SQL by hand are seen by the next request', async () => {
      const user = await t.createUser();
      const missing = '01890000-0000-7000-8000-000000000000';
      const remove = () =>
        t.inject({ method: 'POST', url: `/tags/${missing}/delete`, token: user.token, payload: {} });
      const refused = await remove();
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal((await remove()).statusCode, 403, 'answered from the cached check the second time');
      await byHand.db.updateTable('users').set({ role: 'admin' }).where('uuid', '=', user.uuid).execute();
      const admitted = await remove();
      assert.equal(admitted.statusCode, 404, admitted.body);

      const me = () => t.inject({ method: 'GET', url: '/me', token: user.token });
      assert.equal((await me()).statusCode, 200);
      await byHand.db.updateTable('clients').set({ disabled: 1 }).where('id', '=', t.client.id).execute();
      const disabled = await me();
      assert.equal(body(disabled).error?.code, 'invalid_client', disabled.body);
      await byHand.db.updateTable('clients').set({ disabled: 0 }).where('id', '=', t.client.id).execute();
      assert.equal((await me()).statusCode, 200);

      await byHand.db
        .updateTable('tokens')
        .set({ revoked_at: new Date().toISOString() })
        .where('user_uuid', '=', user.uuid)
        .execute();
      const revoked = await me();
      assert.equal(revoked.statusCode, 401, revoked.body);
      assert.equal(body(revoked).error.code, 'unauthenticated');
    });

    it('a user deleted in SQL by hand is refused by the next request', async () => {
      const user = await t.createUser();
      const me = () => t.inject({ method: 'GET', url: '/me', token: user.token });
      assert.equal((await me()).statusCode, 200);
      // Its tokens go with it (a foreign key's cascade), which the check sees either way.
      await byHand.db.deleteFrom('users').where('uuid', '=', user.uuid).execute();
      const refused = await me();
      assert.equal(refused.statusCode, 401, refused.body);
    });
    it('tokens emptied by TRUNCATE (PostgreSQL) are refused by the next request', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const user = await t.createUser();
      const me = () => t.inject({ method: 'GET', url: '/me', token: user.token });
      assert.equal((await me()).statusCode, 200);
      await sql`truncate tokens`.execute(byHand.db);
      assert.equal((await me()).statusCode, 401);
    });
  });

  describe(`one data version read per request [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let reads = 0;
    let version = 0;

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      await createPost(t, alice, 'counting versions #versiontag');
      // A counting stand-in for the engine's version: it moves only when the test says a write happened.
      registerDirectVersionReader(t.ctx.db, () => {
        reads++;
        return { data: String(version), auth: String(version) };
      });
    });
    after(async () => {
      await t?.close();
    });

    it('the token check and the answer share one version read', async () => {
      version++;
      const tag = await findTag(t, 'hashtag', 'versiontag');
      for (const url of [
        `/tags/${tag.uuid}`,
        '/tags?filterby[tag_type]=hashtag&limit=5',
        `/tag-associations?filterby[tag_uuid]=${tag.uuid}&limit=5`,
      ]) {
        for (const fresh of [false, true, false]) {
          const before = reads;
          const res = await t.inject({
            method: 'GET',
            url,
            token: alice.token,
            ...(fresh ? { headers: { 'cache-control': 'no-cache' } } : {}),
          });
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(reads - before, 1, `${url}${fresh ? ' (no-cache)' : ''}: version reads`);
        }
      }
    });
  });
}

describe('shared version reads (PostgreSQL)', () => {
  it('gives every caller a read sent after it asked, one read for all who wait together', async () => {
    const sent: { at: number; resolve: (v: Versions) => void }[] = [];
    let clock = 0;
    const reads = new SharedVersionReads(
      () => new Promise<Versions>((resolve) => sent.push({ at: ++clock, resolve })),
    );
    const ask = () => {
      const askedAt = ++clock;
      return reads.get().then((v) => ({ askedAt, sentAt: Number(v.data) }));
    };
    const at = (n: number) => ({ data: String(n), auth: '0' });
    const first = ask();
    assert.equal(sent.length, 1, 'nothing running: sent at once');
    const waiting = [ask(), ask(), ask()];
    assert.equal(sent.length, 1, 'the running read is too early for later callers: they wait');
    sent[0]?.resolve(at(sent[0].at));
    await first;
    await new Promise((r) => setImmediate(r));
    assert.equal(sent.length, 2, 'one read for the three that waited');
    const late = ask();
    sent[1]?.resolve(at(sent[1].at));
    const answers = [await first, ...(await Promise.all(waiting))];
    await new Promise((r) => setImmediate(r));
    assert.equal(sent.length, 3, 'a caller that came during the second read gets a third');
    sent[2]?.resolve(at(sent[2].at));
    answers.push(await late);
    for (const a of answers)
      assert.ok(a.sentAt > a.askedAt, `read sent at ${a.sentAt}, asked at ${a.askedAt}`);
  });
});

describe('turn-shared version reads (SQLite)', () => {
  it('reads once for the requests of a turn, after the last of them asked', async () => {
    const log: string[] = [];
    let version = 0;
    const reads = new TurnSharedReads(() => {
      log.push('read');
      return { data: String(++version), auth: '0' };
    });
    const asked = [1, 2, 3].map((i) => {
      log.push(`ask ${i}`);
      return reads.get();
    });
    assert.deepEqual(log, ['ask 1', 'ask 2', 'ask 3'], 'nothing is read while the turn still runs');
    assert.deepEqual(
      (await Promise.all(asked)).map((v) => v.data),
      ['1', '1', '1'],
    );
    assert.deepEqual(log, ['ask 1', 'ask 2', 'ask 3', 'read']);
    assert.equal((await reads.get()).data, '2', 'a later turn reads anew');
  });
});
