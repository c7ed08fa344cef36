import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { body, injectWithToken, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, findTag } from '../tags/support.ts';

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
  });
}
