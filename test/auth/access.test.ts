import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashToken } from '../../src/modules/auth/token.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

for (const dialect of testDialects()) {
  describe(`Access levels: Public, Logged, Owner [${dialect.name}]`, () => {
    let t: TestApp;
    let owner: TestUser;
    let stranger: TestUser;
    let expired: string;
    let revoked: string;

    before(async () => {
      t = await startTestApp(dialect);
      owner = await t.createUser('owner_access');
      stranger = await t.createUser('stranger_access');
      // Extra tokens of the owner, one expired and one revoked directly in the database.
      const login = async () =>
        body(
          await t.inject({
            method: 'POST',
            url: '/oauth/token',
            payload: {
              grant_type: 'password',
              username: owner.username,
              password: owner.password,
              client_id: t.client.id,
              client_secret: t.client.secret,
            },
          }),
        ).access_token as string;
      expired = await login();
      revoked = await login();
      await t.ctx.db
        .updateTable('tokens')
        .set({ expires_at: '2000-01-01T00:00:00.000Z' })
        .where('token_hash', '=', hashToken(expired))
        .execute();
      await t.ctx.db
        .updateTable('tokens')
        .set({ revoked_at: new Date().toISOString() })
        .where('token_hash', '=', hashToken(revoked))
        .execute();
    });
    after(async () => t?.close());

    const call = (method: 'GET' | 'POST', url: string, token?: string, payload?: object) =>
      t.inject({ method, url, token, payload });

    function expectError(res: { statusCode: number; body: string }, status: number, code: string) {
      assert.equal(res.statusCode, status, res.body);
      const b = JSON.parse(res.body);
      assert.equal(b.status, 'ERROR');
      assert.equal(b.error.code, code);
    }

    it('no token, an unknown, an expired or a revoked token: 401 unauthenticated with WWW-Authenticate', async () => {
      const routes: ['GET' | 'POST', string, object?][] = [
        ['GET', `/users/${owner.uuid}`],
        ['GET', '/me'],
        ['POST', `/users/${owner.uuid}/update`, { bio: 'x' }],
        ['POST', '/users', { username: 'nobody_x', email: 'n@example.com', password: 'password123' }],
      ];
      for (const [method, url, payload] of routes) {
        for (const token of [undefined, 'not-a-real-token', expired, revoked]) {
          const res = await call(method, url, token, payload);
          expectError(res, 401, 'unauthenticated');
          assert.equal(res.headers['www-authenticate'], 'Bearer');
        }
      }
    });

    it('Public (GET /users/{uuid}): guest, stranger and owner all read it', async () => {
      for (const token of [t.guest, stranger.token, owner.token]) {
        const res = await call('GET', `/users/${owner.uuid}`, token);
        assert.equal(res.statusCode, 200);
        assert.equal(body(res).data.uuid, owner.uuid);
        assert.equal(res.headers['cache-control'], 'no-store');
      }
    });

    it('Logged (GET /me): a guest gets 403 login_required; users get themselves', async () => {
      expectError(await call('GET', '/me', t.guest), 403, 'login_required');
      assert.equal(body(await call('GET', '/me', stranger.token)).data.uuid, stranger.uuid);
      assert.equal(body(await call('GET', '/me', owner.token)).data.uuid, owner.uuid);
    });

    it('Owner (update): guest 403, stranger 404 exactly like a missing user, owner 200', async () => {
      const url = `/users/${owner.uuid}/update`;
      expectError(await call('POST', url, t.guest, { bio: 'guest' }), 403, 'login_required');
      const foreign = await call('POST', url, stranger.token, { bio: 'stranger' });
      expectError(foreign, 404, 'object_not_found');
      const missing = await call(
        'POST',
        '/users/01890000-0000-7000-8000-000000000000/update',
        stranger.token,
        {
          bio: 'x',
        },
      );
      expectError(missing, 404, 'object_not_found');
      assert.equal(body(foreign).error.message, body(missing).error.message);
      const mine = await call('POST', url, owner.token, { bio: 'mine' });
      assert.equal(mine.statusCode, 200);
      assert.equal(body(mine).data.bio, 'mine');
    });

    it('Owner (delete): guest 403, stranger 404, and nothing is deleted', async () => {
      const url = `/users/${owner.uuid}/delete`;
      expectError(await call('POST', url, t.guest), 403, 'login_required');
      expectError(await call('POST', url, stranger.token), 404, 'object_not_found');
      assert.equal((await call('GET', `/users/${owner.uuid}`, t.guest)).statusCode, 200);
    });

    it('a deleted user’s tokens stop working on the next request', async () => {
      const gone = await t.createUser('gone_access');
      assert.equal((await call('GET', '/me', gone.token)).statusCode, 200);
      await t.ctx.db.deleteFrom('users').where('uuid', '=', gone.uuid).execute();
      expectError(await call('GET', '/me', gone.token), 401, 'unauthenticated');
    });
  });
}
