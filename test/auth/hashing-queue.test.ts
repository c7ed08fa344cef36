// Password checks wait for a bounded number of hashing threads, in a bounded queue: past it, a registration or a
// login is answered 503 at once instead of queueing without end (a flood of sign-ups made every login wait).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashingQueue, verifyPassword } from '../../src/modules/auth/password.ts';
import { body, countRows, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { UNLIMITED } from '../reliability/support.ts';

const AT_ONCE = 8;
const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
/**
 * A hash that takes 8 passes to check (four times a real one): both hashing threads stay held while a few refused
 * requests run, without taking the cores from test files running beside this one for long.
 */
const SLOW_PHC = `$argon2id$v=19$m=19456,t=8,p=1$${b64(Buffer.alloc(16, 1))}$${b64(Buffer.alloc(32, 2))}`;

/** Takes both hashing threads (each call takes one before its first await) until the returned promise settles. */
function holdHashingThreads(): Promise<unknown> {
  return Promise.all([verifyPassword('x', SLOW_PHC), verifyPassword('x', SLOW_PHC)]);
}

/** Registers `name` with the guest token. */
function register(t: TestApp, name: string) {
  return t.inject({
    method: 'POST',
    url: '/users',
    token: t.guest,
    payload: { username: name, email: `${name}@example.com`, password: 'correct horse battery' },
  });
}

/** A password grant for `username` with a password that is not theirs. */
function wrongLogin(t: TestApp, username: string) {
  return t.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: {
      grant_type: 'password',
      username,
      password: 'wrong password here',
      client_id: t.client.id,
      client_secret: t.client.secret,
    },
  });
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
        Array.from({ length: AT_ONCE }, (_, i) => register(t, `queued_${i}`)),
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
      const logins = await Promise.all(Array.from({ length: AT_ONCE }, () => wrongLogin(t, user.username)));
      const busy = logins.filter((r) => r.statusCode === 503);
      assert.ok(busy.length >= 1, logins.map((r) => r.statusCode).join(','));
      for (const r of busy) {
        assert.equal(body(r).error, 'temporarily_unavailable');
        assert.equal(r.headers['retry-after'], '1');
      }
      assert.ok(logins.every((r) => r.statusCode === 503 || r.statusCode === 400));

      // With room to wait again, every check is made.
      Object.assign(hashingQueue, standard);
      const later = await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => register(t, `later_${i}`)));
      assert.deepEqual(
        later.map((r) => r.statusCode),
        Array(AT_ONCE).fill(201),
      );
    });

    it('an unknown account refused while the threads are busy answers like a wrong password afterwards', async () => {
      Object.assign(hashingQueue, { maxWaiting: 0 });
      const held = holdHashingThreads();
      const refused = await wrongLogin(t, 'nobody_here');
      assert.equal(refused.statusCode, 503, refused.body);
      await held;
      Object.assign(hashingQueue, standard);
      // The refusal is not kept: the next unknown account spends its hash and answers as a wrong password does.
      const known = await t.createUser();
      const unknown = await wrongLogin(t, 'nobody_here');
      const wrong = await wrongLogin(t, known.username);
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
      Object.assign(hashingQueue, { maxWaiting: 0 });
      const held = holdHashingThreads();
      const refused: number[] = [];
      for (let i = 0; i < 3; i++) refused.push((await wrongLogin(t, user.username)).statusCode);
      assert.deepEqual(refused, [503, 503, 503]);
      await held;
      Object.assign(hashingQueue, standard);
      // The two failures the budget allows are still there, then 429.
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await wrongLogin(t, user.username)).statusCode);
      assert.deepEqual(codes, [400, 400, 429]);
    });
  });
}
