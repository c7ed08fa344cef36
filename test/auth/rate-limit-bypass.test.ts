import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  body,
  countRows,
  startTestApp,
  type TestApp,
  type TestDialect,
  type TestUser,
  testDialects,
} from '../helper.ts';

const REDIS = process.env.TEST_REDIS_URL;
const LIMIT = 5;
const TOKEN_REQUESTS = 3;
const REGISTRATIONS = 2;

const fakeToken = () => randomBytes(24).toString('base64url');

for (const dialect of testDialects()) {
  describe(`rate limits cannot be bypassed [${dialect.name}]`, () => {
    let t: TestApp;
    let user: TestUser;

    before(async () => {
      t = await startTestApp(dialect, {
        RATE_LIMIT_PER_MINUTE: LIMIT,
        TOKEN_REQUESTS_PER_MINUTE: TOKEN_REQUESTS,
        REGISTRATIONS_PER_MINUTE: REGISTRATIONS,
      });
      user = await t.createUser();
    });
    after(async () => t?.close());

    it('random made-up tokens share one per-address budget (2 x RATE_LIMIT_PER_MINUTE)', async () => {
      const remoteAddress = '198.51.100.7';
      const codes: number[] = [];
      for (let i = 0; i < LIMIT * 3; i++) {
        const res = await t.inject({ method: 'GET', url: '/me', token: fakeToken(), remoteAddress });
        codes.push(res.statusCode);
      }
      assert.deepEqual(codes, [...Array(LIMIT * 2).fill(401), ...Array(LIMIT).fill(429)]);
      const over = await t.inject({ method: 'GET', url: '/me', token: user.token, remoteAddress });
      assert.equal(over.statusCode, 429, 'a valid token from that address is held back too');
      assert.equal(body(over).error.code, 'rate_limited');
      assert.match(body(over).error.message, /client address/);
      assert.ok(Number(over.headers['retry-after']) > 0);
      // Another address is unaffected.
      const other = await t.inject({
        method: 'GET',
        url: '/me',
        token: user.token,
        remoteAddress: '198.51.100.8',
      });
      assert.equal(other.statusCode, 200);
    });

    it('a made-up token does not get a budget of its own', async () => {
      const remoteAddress = '198.51.100.9';
      const token = fakeToken();
      // The same fake token keeps counting in the address budget only: past 2 x LIMIT, 429.
      const codes: number[] = [];
      for (let i = 0; i < LIMIT * 2 + 1; i++) {
        codes.push((await t.inject({ method: 'GET', url: '/me', token, remoteAddress })).statusCode);
      }
      assert.deepEqual(codes, [...Array(LIMIT * 2).fill(401), 429]);
    });

    it('guest-token farming is bounded: the token endpoint per address, then the address budget', async () => {
      const remoteAddress = '203.0.113.40';
      const tokens: string[] = [];
      const codes: number[] = [];
      for (let i = 0; i < TOKEN_REQUESTS + 2; i++) {
        const res = await t.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress,
          payload: {
            grant_type: 'client_credentials',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
        codes.push(res.statusCode);
        if (res.statusCode === 200) tokens.push(body(res).access_token);
        else {
          assert.equal(body(res).error, 'rate_limited', 'the RFC 6749 error shape');
          assert.ok(Number(res.headers['retry-after']) > 0);
        }
      }
      assert.deepEqual(codes, [...Array(TOKEN_REQUESTS).fill(200), 429, 429]);
      // Each guest token alone may make LIMIT requests, but together they stay within the address budget
      // (which the token requests above already used 5 of).
      let ok = 0;
      let limited = 0;
      for (const token of tokens) {
        for (let i = 0; i < LIMIT; i++) {
          const res = await t.inject({ method: 'GET', url: `/users/${user.uuid}`, token, remoteAddress });
          if (res.statusCode === 200) ok++;
          else if (res.statusCode === 429) limited++;
        }
      }
      assert.equal(ok, LIMIT * 2 - (TOKEN_REQUESTS + 2));
      assert.equal(ok + limited, tokens.length * LIMIT);
    });

    it('revocations share the token endpoint budget: client secrets are guessed no faster there', async () => {
      const remoteAddress = '203.0.113.41';
      const revoke = (secret: string) =>
        t.inject({
          method: 'POST',
          url: '/oauth/revoke',
          remoteAddress,
          payload: { token: 'no-such-token', client_id: t.client.id, client_secret: secret },
        });
      const codes: number[] = [];
      for (let i = 0; i < TOKEN_REQUESTS - 1; i++) codes.push((await revoke(`guess-${i}`)).statusCode);
      const token = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        remoteAddress,
        payload: { grant_type: 'client_credentials', client_id: t.client.id, client_secret: t.client.secret },
      });
      codes.push(token.statusCode);
      // The right secret too, once the budget is spent: a guess's answer would tell it from a wrong one.
      const refused = await revoke(t.client.secret);
      codes.push(refused.statusCode);
      assert.deepEqual(codes, [...Array(TOKEN_REQUESTS - 1).fill(401), 200, 429]);
      assert.equal(body(refused).error, 'rate_limited', refused.body);
    });

    it('registrations share a per-address budget of their own; nothing is stored past it', async () => {
      // Each registration hashes a password on the threads logins wait for; a flood of them made logins wait.
      const register = (name: string, remoteAddress: string) =>
        t.inject({
          method: 'POST',
          url: '/users',
          token: t.guest,
          remoteAddress,
          payload: { username: name, email: `${name}@example.com`, password: 'correct horse battery' },
        });
      const before = await countRows(t.ctx.db, 'users');
      const codes: number[] = [];
      for (let i = 0; i <= REGISTRATIONS; i++)
        codes.push((await register(`flood_${i}`, '198.51.100.40')).statusCode);
      assert.deepEqual(codes, [...Array(REGISTRATIONS).fill(201), 429]);
      const over = await register('flood_over', '198.51.100.40');
      assert.equal(body(over).error.code, 'rate_limited');
      assert.match(body(over).error.message, /POST \/users from one client address/);
      assert.ok(Number(over.headers['retry-after']) > 0);
      assert.equal(over.headers['cache-control'], 'no-store');
      assert.equal(await countRows(t.ctx.db, 'users'), before + REGISTRATIONS);
      // Another address has its own budget, and other requests from the first are not held back by it.
      assert.equal((await register('elsewhere', '198.51.100.41')).statusCode, 201);
      const other = await t.inject({
        method: 'GET',
        url: '/me',
        token: user.token,
        remoteAddress: '198.51.100.40',
      });
      assert.equal(other.statusCode, 200);
    });

    it('a valid token keeps its own per-token limit and headers', async () => {
      const remoteAddress = '203.0.113.77';
      const u = await t.createUser();
      const codes: number[] = [];
      for (let i = 0; i < LIMIT + 1; i++) {
        const res = await t.inject({ method: 'GET', url: '/me', token: u.token, remoteAddress });
        codes.push(res.statusCode);
        if (res.statusCode === 200) {
          assert.equal(res.headers['ratelimit-limit'], String(LIMIT));
          assert.equal(res.headers['ratelimit-remaining'], String(LIMIT - 1 - i));
        }
      }
      assert.deepEqual(codes, [...Array(LIMIT).fill(200), 429]);
      assert.match(
        body(await t.inject({ method: 'GET', url: '/me', token: u.token, remoteAddress })).error.message,
        /per token/,
      );
    });
  });
}

describe('rate limits shared through Redis cannot be bypassed with made-up tokens', {
  skip: REDIS ? false : 'TEST_REDIS_URL is not set',
}, () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(testDialects()[0] as TestDialect, {
      REDIS_URL: REDIS,
      REDIS_KEY_PREFIX: `test:${process.pid}:${randomBytes(4).toString('hex')}:`,
      RATE_LIMIT_PER_MINUTE: LIMIT,
    });
  });
  after(async () => t?.close());

  it('counts made-up tokens in the address budget in Redis', async () => {
    const codes: number[] = [];
    for (let i = 0; i < LIMIT * 2 + 2; i++) {
      codes.push(
        (await t.inject({ method: 'GET', url: '/me', token: fakeToken(), remoteAddress: '192.0.2.99' }))
          .statusCode,
      );
    }
    assert.deepEqual(codes, [...Array(LIMIT * 2).fill(401), 429, 429]);
  });
});
