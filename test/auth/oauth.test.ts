import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { saveClient } from '../../src/modules/auth/auth.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

for (const dialect of testDialects()) {
  describe(`OAuth token and revocation endpoints [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    const third = { id: 'third-party', secret: 'third-party-secret' };
    const off = { id: 'disabled-client', secret: 'disabled-secret' };

    /** POST /oauth/token as the test client (body credentials) unless other credentials are given. */
    const token = (payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
      t.inject({ method: 'POST', url: '/oauth/token', payload, headers });
    const asClient = (extra: Record<string, unknown>) =>
      token({ client_id: t.client.id, client_secret: t.client.secret, ...extra });
    const login = (username: string, password: string) =>
      asClient({ grant_type: 'password', username, password });

    before(async () => {
      // Many failed logins and token requests on purpose here; the limits have their own test files.
      t = await startTestApp(dialect, { LOGIN_FAILURES_PER_MINUTE: 1000, TOKEN_REQUESTS_PER_MINUTE: 1000 });
      alice = await t.createUser('alice_oauth');
      await saveClient(t.ctx.db, { ...third, name: 'Third party', firstParty: false });
      await saveClient(t.ctx.db, { ...off, name: 'Disabled', firstParty: true });
      await t.ctx.db.updateTable('clients').set({ disabled: 1 }).where('id', '=', off.id).execute();
    });
    after(async () => t?.close());

    it('client_credentials with HTTP Basic and a form body gives a guest token that works on Public operations', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: {
          authorization: basic(t.client.id, t.client.secret),
          'content-type': 'application/x-www-form-urlencoded',
        },
        payload: 'grant_type=client_credentials',
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      const b = body(res);
      assert.equal(b.token_type, 'Bearer');
      assert.equal(b.expires_in, 3600);
      assert.equal(b.scope, 'guest');
      assert.equal(b.refresh_token, undefined);
      assert.match(b.access_token, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(b.status, undefined, 'RFC 6749 shape, not the envelope');
      const pub = await t.inject({ method: 'GET', url: `/users/${alice.uuid}`, token: b.access_token });
      assert.equal(pub.statusCode, 200);
      const me = await t.inject({ method: 'GET', url: '/me', token: b.access_token });
      assert.equal(me.statusCode, 403);
      assert.equal(body(me).error.code, 'login_required');
    });

    it('client_credentials with client_id/client_secret in a JSON body works too', async () => {
      const res = await asClient({ grant_type: 'client_credentials' });
      assert.equal(res.statusCode, 200);
      assert.equal(body(res).scope, 'guest');
    });

    it('password grant by username (any case) or email gives a user token and a refresh token', async () => {
      for (const name of [alice.username, alice.username.toUpperCase(), alice.email]) {
        const res = await login(name, alice.password);
        assert.equal(res.statusCode, 200, res.body);
        const b = body(res);
        assert.equal(b.scope, 'user');
        assert.match(b.refresh_token, /^[A-Za-z0-9_-]{43}$/);
        const me = await t.inject({ method: 'GET', url: '/me', token: b.access_token });
        assert.equal(me.statusCode, 200);
        assert.equal(body(me).data.uuid, alice.uuid);
      }
    });

    it('unknown user and wrong password give the same answer', async () => {
      const wrong = await login(alice.username, 'not-the-password');
      const unknown = await login('nobody_here', 'not-the-password');
      assert.equal(wrong.statusCode, 400);
      assert.equal(unknown.statusCode, 400);
      assert.deepEqual(body(wrong), body(unknown));
      assert.equal(body(wrong).error, 'invalid_grant');
      assert.equal(wrong.headers['cache-control'], 'no-store');
    });

    it('unknown user and wrong password take about the same time (a dummy hash is verified)', async () => {
      const time = async (name: string) => {
        const start = performance.now();
        await login(name, 'not-the-password');
        return performance.now() - start;
      };
      await time('warm_up_user');
      const known: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 5; i++) {
        known.push(await time(alice.username));
        unknown.push(await time(`nobody_${i}`));
      }
      // Medians, so one request slowed by another test file's work on the same cores decides nothing. Without the
      // dummy verification an unknown user would answer in well under a tenth of the time.
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
      assert.ok(
        median(unknown) > median(known) * 0.4,
        `unknown ${unknown.map((x) => x.toFixed(1))} ms vs known ${known.map((x) => x.toFixed(1))} ms`,
      );
    });

    it('password grant is refused to third-party clients with unauthorized_client', async () => {
      const res = await token({
        grant_type: 'password',
        username: alice.username,
        password: alice.password,
        client_id: third.id,
        client_secret: third.secret,
      });
      assert.equal(res.statusCode, 400);
      assert.equal(body(res).error, 'unauthorized_client');
      const guest = await token({
        grant_type: 'client_credentials',
        client_id: third.id,
        client_secret: third.secret,
      });
      assert.equal(guest.statusCode, 200);
    });

    it('client authentication errors are 401 invalid_client; Basic adds WWW-Authenticate', async () => {
      const cases: [Record<string, unknown>, Record<string, string>, boolean][] = [
        [{ grant_type: 'client_credentials' }, {}, false],
        [{ grant_type: 'client_credentials', client_id: t.client.id, client_secret: 'wrong' }, {}, false],
        [{ grant_type: 'client_credentials', client_id: 'nope', client_secret: 'x' }, {}, false],
        [{ grant_type: 'client_credentials', client_id: t.client.id }, {}, false],
        [{ grant_type: 'client_credentials', client_id: off.id, client_secret: off.secret }, {}, false],
        [{ grant_type: 'client_credentials' }, { authorization: basic(t.client.id, 'wrong') }, true],
        [{ grant_type: 'client_credentials' }, { authorization: basic(off.id, off.secret) }, true],
        [{ grant_type: 'client_credentials' }, { authorization: 'Basic !!!' }, true],
      ];
      for (const [payload, headers, usedBasic] of cases) {
        const res = await token(payload, headers);
        assert.equal(res.statusCode, 401, JSON.stringify(payload));
        assert.equal(body(res).error, 'invalid_client');
        assert.equal(typeof body(res).error_description, 'string');
        if (usedBasic) assert.match(String(res.headers['www-authenticate']), /^Basic/);
        else assert.equal(res.headers['www-authenticate'], undefined);
      }
    });

    it('a client_id beside HTTP Basic names the client (same id: fine); a second secret or another id is a 400', async () => {
      const auth = { authorization: basic(t.client.id, t.client.secret) };
      const same = await token({ grant_type: 'client_credentials', client_id: t.client.id }, auth);
      assert.equal(same.statusCode, 200, same.body);
      for (const extra of [{ client_id: third.id }, { client_secret: t.client.secret }]) {
        const res = await token({ grant_type: 'client_credentials', ...extra }, auth);
        assert.equal(res.statusCode, 400, JSON.stringify(extra));
        assert.equal(body(res).error, 'invalid_request');
      }
    });

    it('Basic credentials with a NUL or another control character are malformed: 401 invalid_client, never a 500', async () => {
      const { id, secret } = t.client;
      const raw = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;
      const headers = [
        basic(`${id}\u0000`, secret),
        basic(id, `\u0000${secret}`),
        basic(`${id}%00`, secret),
        basic(id, `${secret}%00`),
        basic(`te\u0001st`, secret),
        basic(id, `${secret}\u007f`),
        basic(id, `${secret}%0A`),
        raw(`${id}:${secret}\r\n`),
      ];
      for (const authorization of headers) {
        for (const [url, payload] of [
          ['/oauth/token', { grant_type: 'client_credentials' }],
          ['/oauth/revoke', { token: 'x'.repeat(43) }],
        ] as const) {
          const res = await t.inject({ method: 'POST', url, payload, headers: { authorization } });
          assert.equal(res.statusCode, 401, `${url} ${authorization}: ${res.body}`);
          assert.equal(body(res).error, 'invalid_client');
          assert.match(body(res).error_description, /not valid HTTP Basic/);
          assert.match(String(res.headers['www-authenticate']), /^Basic/);
        }
      }
      const ok = await token({ grant_type: 'client_credentials' }, { authorization: basic(id, secret) });
      assert.equal(ok.statusCode, 200, ok.body);
    });

    it('a disabled client’s tokens stop working', async () => {
      await saveClient(t.ctx.db, { id: 'soon-off', secret: 'soon-off-secret', name: 'x', firstParty: true });
      const res = await token({
        grant_type: 'client_credentials',
        client_id: 'soon-off',
        client_secret: 'soon-off-secret',
      });
      const guest = body(res).access_token;
      assert.equal(
        (await t.inject({ method: 'GET', url: `/users/${alice.uuid}`, token: guest })).statusCode,
        200,
      );
      await t.ctx.db.updateTable('clients').set({ disabled: 1 }).where('id', '=', 'soon-off').execute();
      const after = await t.inject({ method: 'GET', url: `/users/${alice.uuid}`, token: guest });
      assert.equal(after.statusCode, 401);
      assert.equal(body(after).error.code, 'invalid_client');
      assert.equal(
        after.headers['www-authenticate'],
        'Bearer error="invalid_token"',
        'a 401 names its scheme',
      );
      // Enabled again (BOOTSTRAP_CLIENT, clients create with the id): what the disable refused stays refused.
      await saveClient(t.ctx.db, { id: 'soon-off', secret: 'soon-off-secret', name: 'x', firstParty: true });
      const again = await t.inject({ method: 'GET', url: `/users/${alice.uuid}`, token: guest });
      assert.equal(again.statusCode, 401, again.body);
    });

    it('a new client secret revokes what the old one issued; saving the same secret (a restart) revokes nothing', async () => {
      const save = (secret: string) =>
        saveClient(t.ctx.db, { id: 'rotating', secret, name: 'x', firstParty: true });
      await save('rotating-secret-1');
      const login = await token({
        grant_type: 'password',
        username: alice.username,
        password: alice.password,
        client_id: 'rotating',
        client_secret: 'rotating-secret-1',
      });
      assert.equal(login.statusCode, 200, login.body);
      const { access_token: access, refresh_token: refresh } = body(login);
      const me = () => t.inject({ method: 'GET', url: '/me', token: access });
      await save('rotating-secret-1');
      assert.equal((await me()).statusCode, 200, 'a restart with the same secret logs nobody out');
      await save('rotating-secret-2');
      assert.equal((await me()).statusCode, 401);
      const refreshed = await token({
        grant_type: 'refresh_token',
        refresh_token: refresh,
        client_id: 'rotating',
        client_secret: 'rotating-secret-2',
      });
      assert.equal(refreshed.statusCode, 400, refreshed.body);
      assert.equal(body(refreshed).error, 'invalid_grant');
    });

    it('request errors: missing or unknown grant_type, missing fields, both auth methods', async () => {
      const missing = await asClient({});
      assert.equal(missing.statusCode, 400);
      assert.equal(body(missing).error, 'invalid_request');
      const unknown = await asClient({ grant_type: 'authorization_code' });
      assert.equal(unknown.statusCode, 400);
      assert.equal(body(unknown).error, 'unsupported_grant_type');
      const noPassword = await asClient({ grant_type: 'password', username: alice.username });
      assert.equal(body(noPassword).error, 'invalid_request');
      const noRefresh = await asClient({ grant_type: 'refresh_token' });
      assert.equal(body(noRefresh).error, 'invalid_request');
      const both = await token(
        { grant_type: 'client_credentials', client_id: t.client.id, client_secret: t.client.secret },
        { authorization: basic(t.client.id, t.client.secret) },
      );
      assert.equal(both.statusCode, 400);
      assert.equal(body(both).error, 'invalid_request');
      const repeated = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&grant_type=password&client_id=${t.client.id}&client_secret=${t.client.secret}`,
      });
      assert.equal(repeated.statusCode, 400);
      assert.equal(body(repeated).error, 'invalid_request');
      // A list for one value, and a JSON field of the wrong type: refused, and the description names the field.
      const listed = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type[]=password&username=${alice.username}&password=${encodeURIComponent(alice.password)}&client_id=${t.client.id}&client_secret=${t.client.secret}`,
      });
      assert.equal(listed.statusCode, 400, listed.body);
      assert.equal(body(listed).access_token, undefined);
      assert.match(body(listed).error_description, /grant_type/);
      const mistyped = await asClient({ grant_type: 'password', username: alice.username, password: 123 });
      assert.equal(mistyped.statusCode, 400, mistyped.body);
      assert.match(body(mistyped).error_description, /password/);
      const badJson = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/json' },
        payload: '{"grant_type":',
      });
      assert.equal(badJson.statusCode, 400);
      assert.equal(body(badJson).error, 'invalid_request');
    });

    it('refresh_token rotates; reusing a spent refresh token revokes the whole family', async () => {
      const first = body(await login(alice.username, alice.password));
      const second = await asClient({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      assert.equal(second.statusCode, 200, second.body);
      const s = body(second);
      assert.notEqual(s.refresh_token, first.refresh_token);
      assert.equal(s.scope, 'user');
      assert.equal((await t.inject({ method: 'GET', url: '/me', token: s.access_token })).statusCode, 200);
      // The old access token keeps working until it expires or the family is revoked.
      assert.equal(
        (await t.inject({ method: 'GET', url: '/me', token: first.access_token })).statusCode,
        200,
      );

      const reuse = await asClient({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      assert.equal(reuse.statusCode, 400);
      assert.equal(body(reuse).error, 'invalid_grant');
      for (const tok of [first.access_token, s.access_token]) {
        const res = await t.inject({ method: 'GET', url: '/me', token: tok });
        assert.equal(res.statusCode, 401);
        assert.equal(body(res).error.code, 'unauthenticated');
      }
      const next = await asClient({ grant_type: 'refresh_token', refresh_token: s.refresh_token });
      assert.equal(next.statusCode, 400, 'the newest refresh token of the family is revoked too');
      assert.equal(body(next).error, 'invalid_grant');
      // Another login of the same user is another family and is untouched.
      const other = body(await login(alice.username, alice.password));
      assert.equal(
        (await t.inject({ method: 'GET', url: '/me', token: other.access_token })).statusCode,
        200,
      );
    });

    it('refresh_token errors: unknown, expired, another client’s, an access token', async () => {
      const pair = body(await login(alice.username, alice.password));
      const unknown = await asClient({ grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) });
      assert.equal(body(unknown).error, 'invalid_grant');
      const access = await asClient({ grant_type: 'refresh_token', refresh_token: pair.access_token });
      assert.equal(body(access).error, 'invalid_grant');
      const foreign = await token({
        grant_type: 'refresh_token',
        refresh_token: pair.refresh_token,
        client_id: third.id,
        client_secret: third.secret,
      });
      assert.equal(body(foreign).error, 'invalid_grant');
      await t.ctx.db
        .updateTable('tokens')
        .set({ expires_at: '2000-01-01T00:00:00.000Z' })
        .where('kind', '=', 'refresh')
        .where('user_uuid', '=', alice.uuid)
        .execute();
      const expired = await asClient({ grant_type: 'refresh_token', refresh_token: pair.refresh_token });
      assert.equal(expired.statusCode, 400);
      assert.equal(body(expired).error, 'invalid_grant');
    });

    it('revoke (RFC 7009): an access token, a refresh token (its family), unknown tokens are 200', async () => {
      const a = body(await login(alice.username, alice.password));
      const r1 = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        headers: { authorization: basic(t.client.id, t.client.secret) },
        payload: { token: a.access_token, token_type_hint: 'access_token' },
      });
      assert.equal(r1.statusCode, 200);
      assert.equal(r1.headers['cache-control'], 'no-store');
      assert.equal((await t.inject({ method: 'GET', url: '/me', token: a.access_token })).statusCode, 401);
      // The refresh token still works: revoking an access token ends only that token.
      const b = body(await asClient({ grant_type: 'refresh_token', refresh_token: a.refresh_token }));
      assert.ok(b.access_token);

      const r2 = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { token: b.refresh_token, client_id: t.client.id, client_secret: t.client.secret },
      });
      assert.equal(r2.statusCode, 200);
      assert.equal((await t.inject({ method: 'GET', url: '/me', token: b.access_token })).statusCode, 401);
      const refresh = await asClient({ grant_type: 'refresh_token', refresh_token: b.refresh_token });
      assert.equal(body(refresh).error, 'invalid_grant');

      const unknown = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { token: 'no-such-token', client_id: t.client.id, client_secret: t.client.secret },
      });
      assert.equal(unknown.statusCode, 200);
      // Longer than any token issued: unknown too (200 on revoke, invalid_grant on refresh), not a malformed request.
      const long = 'a'.repeat(300);
      const longRevoke = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { token: long, client_id: t.client.id, client_secret: t.client.secret },
      });
      assert.equal(longRevoke.statusCode, 200, longRevoke.body);
      const longRefresh = await asClient({ grant_type: 'refresh_token', refresh_token: long });
      assert.equal(longRefresh.statusCode, 400);
      assert.equal(body(longRefresh).error, 'invalid_grant');
      const huge = await asClient({ grant_type: 'refresh_token', refresh_token: 'a'.repeat(5000) });
      assert.equal(body(huge).error, 'invalid_request', 'still bounded');
    });

    it('revoke: another client cannot revoke a token; client auth and token are required', async () => {
      const a = body(await login(alice.username, alice.password));
      const foreign = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { token: a.access_token, client_id: third.id, client_secret: third.secret },
      });
      assert.equal(foreign.statusCode, 200);
      assert.equal((await t.inject({ method: 'GET', url: '/me', token: a.access_token })).statusCode, 200);
      const noAuth = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { token: a.access_token },
      });
      assert.equal(noAuth.statusCode, 401);
      assert.equal(body(noAuth).error, 'invalid_client');
      const noToken = await t.inject({
        method: 'POST',
        url: '/oauth/revoke',
        payload: { client_id: t.client.id, client_secret: t.client.secret },
      });
      assert.equal(noToken.statusCode, 400);
      assert.equal(body(noToken).error, 'invalid_request');
    });

    it('the OpenAPI document lists both endpoints', async () => {
      const doc = body(await t.inject({ method: 'GET', url: '/openapi.json' }));
      assert.ok(doc.paths['/oauth/token'].post);
      assert.ok(doc.paths['/oauth/revoke'].post);
    });
  });
}
