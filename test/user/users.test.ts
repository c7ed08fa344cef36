import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DomainEvent } from '../../src/events/bus.ts';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';

for (const dialect of testDialects()) {
  describe(`Users [${dialect.name}]`, () => {
    let t: TestApp;
    const events: DomainEvent[] = [];

    before(async () => {
      t = await startTestApp(dialect, {
        LOGIN_FAILURES_PER_MINUTE: 1000,
        REGISTRATIONS_PER_MINUTE: 1000,
        PASSWORD_CHANGES_PER_MINUTE: 1000,
      });
      t.ctx.bus.on(['userDeleted'], async (_trx, e) => {
        events.push(e);
      });
    });
    after(async () => t?.close());

    const register = (payload: Record<string, unknown>, token = t.guest) =>
      t.inject({ method: 'POST', url: '/users', token, payload });
    const login = async (username: string, password: string) =>
      t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'password',
          username,
          password,
          client_id: t.client.id,
          client_secret: t.client.secret,
        },
      });

    it('registers with a guest token: 201 and the public User (no email, no hash)', async () => {
      const res = await register({
        username: 'Bob_1',
        email: 'Bob@Example.com',
        password: 'correct horse battery',
        display_name: 'Bob',
        bio: 'Hello',
        language: 'de',
      });
      assert.equal(res.statusCode, 201, res.body);
      const u = body(res).data;
      assert.deepEqual(Object.keys(u).sort(), [
        'bio',
        'created_at',
        'display_name',
        'karma',
        'language',
        'network_uuid',
        'type',
        'updated_at',
        'username',
        'uuid',
      ]);
      assert.equal(u.type, 'user');
      assert.equal(u.username, 'Bob_1');
      assert.equal(u.language, 'de');
      assert.equal(u.karma, 0);
      assert.equal(u.network_uuid, null);
      assert.match(u.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
      // The new user can log in right away, with either spelling.
      assert.equal((await login('bob_1', 'correct horse battery')).statusCode, 200);
      assert.equal((await login('bob@example.com', 'correct horse battery')).statusCode, 200);
    });

    it('409 conflict for a username or email taken ignoring case', async () => {
      const name = await register({ username: 'BOB_1', email: 'other@example.com', password: 'password123' });
      assert.equal(name.statusCode, 409);
      assert.equal(body(name).error.code, 'conflict');
      assert.deepEqual(
        body(name).error.details.map((d: { field: string }) => d.field),
        ['username'],
      );
      const mail = await register({
        username: 'someone_else',
        email: 'bob@EXAMPLE.com',
        password: 'password123',
      });
      assert.equal(mail.statusCode, 409);
      assert.deepEqual(
        body(mail).error.details.map((d: { field: string }) => d.field),
        ['email'],
      );
    });

    it('400 for invalid fields, and nothing is stored', async () => {
      const before = await t.ctx.db.selectFrom('users').select('uuid').execute();
      const bad: [Record<string, unknown>, string][] = [
        [{ email: 'a@example.com', password: 'password123' }, 'username'],
        [{ username: 'ab', email: 'a@example.com', password: 'password123' }, 'username'],
        [{ username: 'a'.repeat(31), email: 'a@example.com', password: 'password123' }, 'username'],
        [{ username: 'bad-name', email: 'a@example.com', password: 'password123' }, 'username'],
        [{ username: 'bad name', email: 'a@example.com', password: 'password123' }, 'username'],
        [{ username: 'good_name', email: 'not-an-email', password: 'password123' }, 'email'],
        [
          { username: 'good_name', email: `${'a'.repeat(250)}@example.com`, password: 'password123' },
          'email',
        ],
        [{ username: 'good_name', email: 'a@example.com', password: 'short' }, 'password'],
        [{ username: 'good_name', email: 'a@example.com', password: 'x'.repeat(257) }, 'password'],
        [
          { username: 'good_name', email: 'a@example.com', password: 'password123', language: 'xx' },
          'language',
        ],
        [{ username: 'good_name', email: 'a@example.com', password: 'password123', role: 'admin' }, 'role'],
        [{ username: 'good_name', email: 'a@example.com', password: 'password123', karma: 100 }, 'karma'],
      ];
      for (const [payload, field] of bad) {
        const res = await register(payload);
        assert.equal(res.statusCode, 400, JSON.stringify(payload));
        const b = body(res);
        assert.equal(b.error.code, 'invalid_request');
        assert.ok(
          b.error.details.some((d: { field: string }) => d.field === field),
          `${field} in ${JSON.stringify(b.error.details)}`,
        );
      }
      const afterRows = await t.ctx.db.selectFrom('users').select('uuid').execute();
      assert.equal(afterRows.length, before.length);
    });

    it('a 256-character password is used in full (never truncated)', async () => {
      const password = `${'p'.repeat(255)}1`;
      const res = await register({ username: 'longpw', email: 'longpw@example.com', password });
      assert.equal(res.statusCode, 201);
      assert.equal((await login('longpw', password)).statusCode, 200);
      assert.equal((await login('longpw', `${'p'.repeat(255)}2`)).statusCode, 400);
      assert.equal((await login('longpw', 'p'.repeat(255))).statusCode, 400);
    });

    it('GET /users/{uuid}: public fields only; 404 for unknown; 400 for a malformed uuid', async () => {
      const u = await t.createUser('carol_users');
      const res = await t.inject({ method: 'GET', url: `/users/${u.uuid}`, token: t.guest });
      assert.equal(res.statusCode, 200);
      assert.equal(body(res).data.username, 'carol_users');
      assert.ok(!res.body.includes(u.email), 'no email');
      assert.ok(!res.body.includes('argon2'), 'no hash');
      assert.equal(body(res).data.role, undefined);
      const missing = await t.inject({
        method: 'GET',
        url: '/users/01890000-0000-7000-8000-000000000000',
        token: t.guest,
      });
      assert.equal(missing.statusCode, 404);
      assert.equal(body(missing).error.code, 'object_not_found');
      const bad = await t.inject({ method: 'GET', url: '/users/not-a-uuid', token: t.guest });
      assert.equal(bad.statusCode, 400);
    });

    it('GET /me adds email and role', async () => {
      const u = await t.createUser('dave_users', 'admin');
      const res = await t.inject({ method: 'GET', url: '/me', token: u.token });
      assert.equal(res.statusCode, 200);
      const me = body(res).data;
      assert.equal(me.email, u.email);
      assert.equal(me.role, 'admin');
      assert.equal(me.password_hash, undefined);
    });

    it('update changes the profile; null clears; empty or bad bodies are 400', async () => {
      const u = await t.createUser('erin_users');
      const url = `/users/${u.uuid}/update`;
      const res = await t.inject({
        method: 'POST',
        url,
        token: u.token,
        payload: { display_name: 'Erin', bio: 'Bio', language: 'fr' },
      });
      assert.equal(res.statusCode, 200);
      const d = body(res).data;
      assert.equal(d.display_name, 'Erin');
      assert.equal(d.language, 'fr');
      assert.ok(d.updated_at >= d.created_at);
      const cleared = await t.inject({ method: 'POST', url, token: u.token, payload: { bio: null } });
      assert.equal(body(cleared).data.bio, null);
      assert.equal(body(cleared).data.display_name, 'Erin');
      for (const payload of [
        {},
        { language: 'klingon' },
        { username: 'renamed' },
        { email: 'x@example.com' },
        { password: 'short' },
      ]) {
        const bad = await t.inject({ method: 'POST', url, token: u.token, payload });
        assert.equal(bad.statusCode, 400, JSON.stringify(payload));
        assert.equal(body(bad).error.code, 'invalid_request');
      }
      const stored = await t.ctx.db
        .selectFrom('users')
        .selectAll()
        .where('uuid', '=', u.uuid)
        .executeTakeFirstOrThrow();
      assert.equal(stored.username, 'erin_users');
      assert.equal(stored.language, 'fr');
    });

    it('a password change works for login and ends the user’s other sessions, not the current one', async () => {
      const u = await t.createUser('frank_users');
      const other = body(await login(u.username, u.password));
      const res = await t.inject({
        method: 'POST',
        url: `/users/${u.uuid}/update`,
        token: u.token,
        payload: { password: 'a brand new password' },
      });
      assert.equal(res.statusCode, 200);
      assert.equal((await t.inject({ method: 'GET', url: '/me', token: u.token })).statusCode, 200);
      assert.equal(
        (await t.inject({ method: 'GET', url: '/me', token: other.access_token })).statusCode,
        401,
      );
      assert.equal((await login(u.username, u.password)).statusCode, 400);
      assert.equal((await login(u.username, 'a brand new password')).statusCode, 200);
    });

    it('delete: emits userDeleted, revokes every token, removes the user', async () => {
      const u = await t.createUser('gina_users');
      const second = body(await login(u.username, u.password));
      const res = await t.inject({ method: 'POST', url: `/users/${u.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(Object.keys(body(res)).sort(), ['status', 'timestamp']);
      assert.ok(
        events.some((e) => e.name === 'userDeleted' && e.targetUuid === u.uuid && e.actorUuid === u.uuid),
      );
      for (const tok of [u.token, second.access_token]) {
        const me = await t.inject({ method: 'GET', url: '/me', token: tok });
        assert.equal(me.statusCode, 401);
      }
      const refresh = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'refresh_token',
          refresh_token: second.refresh_token,
          client_id: t.client.id,
          client_secret: t.client.secret,
        },
      });
      assert.equal(body(refresh).error, 'invalid_grant');
      assert.equal(
        (await t.inject({ method: 'GET', url: `/users/${u.uuid}`, token: t.guest })).statusCode,
        404,
      );
      assert.equal((await login(u.username, u.password)).statusCode, 400);
      const rows = await t.ctx.db
        .selectFrom('tokens')
        .select('token_hash')
        .where('user_uuid', '=', u.uuid)
        .execute();
      assert.equal(rows.length, 0);
    });

    it('a failing userDeleted subscriber rolls the whole delete back', async () => {
      const u = await t.createUser('hank_users');
      let fail = true;
      t.ctx.bus.on(['userDeleted'], async () => {
        if (fail) throw new Error('subscriber failed');
      });
      const res = await t.inject({ method: 'POST', url: `/users/${u.uuid}/delete`, token: u.token });
      assert.equal(res.statusCode, 500);
      fail = false;
      assert.equal((await t.inject({ method: 'GET', url: '/me', token: u.token })).statusCode, 200);
    });

    it('the database holds no raw token, password or client secret', async () => {
      const password = 'dump check password 42';
      const reg = await register({ username: 'dumpcheck', email: 'dump@example.com', password });
      assert.equal(reg.statusCode, 201);
      const pair = body(await login('dumpcheck', password));
      const rotated = body(
        await t.inject({
          method: 'POST',
          url: '/oauth/token',
          payload: {
            grant_type: 'refresh_token',
            refresh_token: pair.refresh_token,
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        }),
      );
      const secrets = [
        password,
        pair.access_token,
        pair.refresh_token,
        rotated.access_token,
        rotated.refresh_token,
        t.guest,
        t.client.secret,
      ];
      const dump = JSON.stringify([
        await t.ctx.db.selectFrom('tokens').selectAll().execute(),
        await t.ctx.db.selectFrom('users').selectAll().execute(),
        await t.ctx.db.selectFrom('clients').selectAll().execute(),
      ]);
      assert.ok(dump.includes('dumpcheck'), 'the dump has the rows');
      for (const s of secrets) assert.ok(!dump.includes(s), `raw secret ${s.slice(0, 6)}... is stored`);
      assert.match(dump, /\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    });
  });
}
