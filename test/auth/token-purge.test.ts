// Every guest token, login and refresh adds rows to `tokens`: expired ones are purged, while a spent refresh token
// that has not expired stays, so presenting it again still revokes the login.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashToken } from '../../src/modules/auth/token.ts';
import { purgeExpiredTokens } from '../../src/modules/auth/token-purge.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

const YESTERDAY = new Date(Date.now() - 86_400_000).toISOString();

for (const dialect of testDialects()) {
  describe(`expired tokens are purged [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;

    const grant = async (payload: Record<string, unknown>) => {
      const res = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: { client_id: t.client.id, client_secret: t.client.secret, ...payload },
      });
      return { status: res.statusCode, body: body(res) };
    };
    const login = async () =>
      (await grant({ grant_type: 'password', username: alice.username, password: alice.password })).body;
    const expire = (token: string) =>
      t.ctx.db
        .updateTable('tokens')
        .set({ expires_at: YESTERDAY })
        .where('token_hash', '=', hashToken(token))
        .execute();
    const stored = async (token: string) =>
      (
        await t.ctx.db
          .selectFrom('tokens')
          .select('token_hash')
          .where('token_hash', '=', hashToken(token))
          .execute()
      ).length === 1;

    before(async () => {
      t = await startTestApp(dialect, { TOKEN_PURGE_INTERVAL_SECONDS: 1 });
      alice = await t.createUser('alice_purge');
    });
    after(async () => t?.close());

    it('deletes expired tokens of every kind; a spent refresh token stays until it expires, and still revokes', async () => {
      const guest = (await grant({ grant_type: 'client_credentials' })).body.access_token as string;
      const ended = await login();
      const living = await login();
      const next = (await grant({ grant_type: 'refresh_token', refresh_token: living.refresh_token })).body;
      for (const token of [guest, ended.access_token, ended.refresh_token, living.access_token])
        await expire(token);
      // The app's own timer (1 s here) may purge first; either way the rows end as asserted.
      const run = await purgeExpiredTokens(t.ctx);
      assert.equal(run.more, false);
      assert.equal(await stored(guest), false, 'an expired guest token goes');
      assert.equal(await stored(ended.access_token), false);
      assert.equal(await stored(ended.refresh_token), false);
      assert.equal(
        await stored(living.access_token),
        false,
        'an expired access token goes, its login living',
      );
      assert.equal(await stored(living.refresh_token), true, 'a spent refresh token not yet expired stays');
      assert.equal(await stored(next.refresh_token), true);
      // Presented again, it still ends the login: the newer refresh token is revoked.
      const replay = await grant({ grant_type: 'refresh_token', refresh_token: living.refresh_token });
      assert.equal(replay.body.error, 'invalid_grant');
      const later = await grant({ grant_type: 'refresh_token', refresh_token: next.refresh_token });
      assert.equal(later.body.error, 'invalid_grant', 'the login was revoked by the reuse');
      // Tokens still valid are never touched.
      const me = await t.inject({ method: 'GET', url: '/me', token: alice.token });
      assert.equal(me.statusCode, 200);
      // A run told to stop deletes nothing more and says some may be left.
      await expire(next.access_token);
      assert.deepEqual(await purgeExpiredTokens(t.ctx, new Date(), 50, () => true), {
        deleted: 0,
        more: true,
      });
    });

    it('runs by itself every TOKEN_PURGE_INTERVAL_SECONDS', async () => {
      const guest = (await grant({ grant_type: 'client_credentials' })).body.access_token as string;
      await expire(guest);
      for (let i = 0; i < 40 && (await stored(guest)); i++) await sleep(100);
      assert.equal(await stored(guest), false, 'purged within a few intervals');
    });
  });
}
