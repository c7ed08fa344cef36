// Password checks wait for a bounded number of hashing threads, in a bounded queue: past it, a registration or a
// login is answered 503 at once instead of queueing without end (a flood of sign-ups made every login wait).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashingQueue, verifyPassword } from '../../src/modules/auth/password.ts';
import { body, countRows, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { UNLIMITED } from '../reliability/support.ts';

const AT_ONCE = 8;

/** A hash that takes 60 passes to check: holding both hashing threads for a while, whatever the machine. */
const SLOW_PHC = `$argon2id$v=19$m=19456,t=60,p=1$${Buffer.alloc(16, 1).toString('base64').replace(/=+$/, '')}$${Buffer.alloc(32, 2).toString('base64').replace(/=+$/, '')}`;

/** Takes both hashing threads (each call takes one before its first await) until the returned promise settles. */
function holdHashingThreads(): Promise<unknown> {
  return Promise.all([verifyPassword('x', SLOW_PHC), verifyPassword('x', SLOW_PHC)]);
}

for (const dialect of testDialects()) {
  describe(`password hashing queue [${dialect.name}]`, () => {
    let t: TestApp;
    const standard = { ...hashingQueue };

    before(async () => {
      t = await startTestApp(dialect, UNLIMITED);
    });
    after(async () => {
      Object.assign(hashingQueue, standard);
      await t?.close();
    });

    it('answers checks past the queue 503 with Retry-After, storing nothing for them', async () => {
      // No waiting place: the checks beyond the hashing threads are refused at once.
      Object.assign(hashingQueue, { maxWaiting: 0 });
      const before = await countRows(t.ctx.db, 'users');
      const answers = await Promise.all(
        Array.from({ length: AT_ONCE }, (_, i) =>
          t.inject({
            method: 'POST',
            url: '/users',
            token: t.guest,
            payload: {
              username: `queued_${i}`,
              email: `queued_${i}@example.com`,
              password: 'correct horse battery',
            },
          }),
        ),
      );
      const created = answers.filter((r) => r.statusCode === 201);
      const refused = answers.filter((r) => r.statusCode === 503);
      assert.equal(created.length + refused.length, AT_ONCE, answers.map((r) => r.body).join('\n'));
      assert.ok(created.length >= 1 && refused.length >= 1, answers.map((r) => r.statusCode).join(','));
      for (const r of refused) {
        assert.equal(body(r).error.code, 'unavailable');
        assert.equal(r.headers['retry-after'], '1');
      }
      assert.equal(await countRows(t.ctx.db, 'users'), before + created.length);

      // A login refused so answers in the token endpoint's own form.
      const user = await t.createUser();
      const logins = await Promise.all(
        Array.from({ length: AT_ONCE }, () =>
          t.inject({
            method: 'POST',
            url: '/oauth/token',
            payload: {
              grant_type: 'password',
              username: user.username,
              password: 'wrong password here',
              client_id: t.client.id,
              client_secret: t.client.secret,
            },
          }),
        ),
      );
      const busy = logins.filter((r) => r.statusCode === 503);
      assert.ok(busy.length >= 1, logins.map((r) => r.statusCode).join(','));
      for (const r of busy) {
        assert.equal(body(r).error, 'temporarily_unavailable');
        assert.equal(r.headers['retry-after'], '1');
      }
      assert.ok(logins.every((r) => r.statusCode === 503 || r.statusCode === 400));

      // With room to wait again, every check is made.
      Object.assign(hashingQueue, standard);
      const later = await Promise.all(
        Array.from({ length: AT_ONCE }, (_, i) =>
          t.inject({
            method: 'POST',
            url: '/users',
            token: t.guest,
            payload: {
              username: `later_${i}`,
              email: `later_${i}@example.com`,
              password: 'correct horse battery',
            },
          }),
        ),
      );
      assert.deepEqual(
        later.map((r) => r.statusCode),
        Array(AT_ONCE).fill(201),
      );
    });

    it('an unknown account refused while the threads are busy answers like a wrong password afterwards', async () => {
      const login = (username: string) =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          payload: {
            grant_type: 'password',
            username,
            password: 'some password',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
      Object.assign(hashingQueue, { maxWaiting: 0 });
      const held = holdHashingThreads();
      const refused = await login('nobody_here');
      assert.equal(refused.statusCode, 503, refused.body);
      await held;
      Object.assign(hashingQueue, standard);
      // The refusal is not kept: the next unknown account spends its hash and answers as a wrong password does.
      const known = await t.createUser();
      const unknown = await login('nobody_here');
      const wrong = await login(known.username);
      assert.equal(unknown.statusCode, 400, unknown.body);
      assert.deepEqual(
        { status: unknown.statusCode, body: body(unknown) },
        { status: wrong.statusCode, body: body(wrong) },
      );
    });
  });

  describe(`password hashing queue and the failed-login budget [${dialect.name}]`, () => {
    let t: TestApp;
    const standard = { ...hashingQueue };
    before(async () => {
      t = await startTestApp(dialect, { ...UNLIMITED, LOGIN_FAILURES_PER_MINUTE: 2 });
    });
    after(async () => {
      Object.assign(hashingQueue, standard);
      await t?.close();
    });

    it('a login refused for a full queue is no failed login: it does not use up the budget', async () => {
      const user = await t.createUser();
      const login = () =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          payload: {
            grant_type: 'password',
            username: user.username,
            password: 'wrong password here',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
      Object.assign(hashingQueue, { maxWaiting: 0 });
      const held = holdHashingThreads();
      const refused = [await login(), await login(), await login()];
      assert.deepEqual(
        refused.map((r) => r.statusCode),
        [503, 503, 503],
      );
      await held;
      Object.assign(hashingQueue, standard);
      // The two failures the budget allows are still there, then 429.
      const codes = [(await login()).statusCode, (await login()).statusCode, (await login()).statusCode];
      assert.deepEqual(codes, [400, 400, 429]);
    });
  });
}
