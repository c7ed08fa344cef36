import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// A password change hashes on the threads logins use; from one token, 120 at once made other users' logins wait a
// second or answer 503 (found by a probe). PASSWORD_CHANGES_PER_MINUTE bounds them per user and per address.
const CHANGES = 2;

for (const dialect of testDialects()) {
  describe(`password changes have a budget of their own [${dialect.name}]`, () => {
    let t: TestApp;

    before(async () => {
      t = await startTestApp(dialect, { PASSWORD_CHANGES_PER_MINUTE: CHANGES });
    });
    after(async () => t?.close());

    const update = (
      user: TestUser,
      payload: Record<string, unknown>,
      remoteAddress: string,
      uuid = user.uuid,
    ) =>
      t.inject({ method: 'POST', url: `/users/${uuid}/update`, token: user.token, payload, remoteAddress });
    const login = (user: TestUser, password: string) =>
      t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'password',
          username: user.username,
          password,
          client_id: t.client.id,
          client_secret: t.client.secret,
        },
      });

    it('counts per user, whatever the address, and keeps the password of the last change let through', async () => {
      const user = await t.createUser();
      const other = await t.createUser();
      // Neither a malformed body nor someone else's uuid spends the budget.
      assert.equal((await update(user, { password: 'short' }, '203.0.113.1')).statusCode, 400);
      assert.equal(
        (await update(user, { password: 'not mine at all' }, '203.0.113.1', other.uuid)).statusCode,
        404,
      );
      for (const [i, address] of ['203.0.113.1', '203.0.113.2'].entries()) {
        const res = await update(user, { password: `new password ${i}` }, address);
        assert.equal(res.statusCode, 200, res.body);
      }
      const over = await update(user, { password: 'new password 2' }, '203.0.113.3');
      assert.equal(over.statusCode, 429);
      assert.equal(body(over).error.code, 'rate_limited');
      assert.match(body(over).error.message, /one user’s password/);
      assert.ok(Number(over.headers['retry-after']) > 0);
      // Nothing changed: the last password let through logs in, the refused one does not.
      assert.equal((await login(user, 'new password 2')).statusCode, 400);
      assert.equal((await login(user, 'new password 1')).statusCode, 200);
      // Profile changes without a password are not counted.
      const bio = await update(user, { bio: 'still here' }, '203.0.113.3');
      assert.equal(bio.statusCode, 200, bio.body);
      assert.equal(body(bio).data.bio, 'still here');
    });

    it('counts per client address, whoever changes', async () => {
      const [first, second] = [await t.createUser(), await t.createUser()];
      for (let i = 0; i < CHANGES; i++) {
        assert.equal(
          (await update(first, { password: `first password ${i}` }, '203.0.113.20')).statusCode,
          200,
        );
      }
      const over = await update(second, { password: 'second password' }, '203.0.113.20');
      assert.equal(over.statusCode, 429);
      assert.match(body(over).error.message, /client address/);
      const elsewhere = await update(second, { password: 'second password' }, '203.0.113.21');
      assert.equal(elsewhere.statusCode, 200, elsewhere.body);
    });
  });
}
