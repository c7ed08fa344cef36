import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { addressKey } from '../../src/modules/auth/client-address.ts';
import {
  body,
  startTestApp,
  type TestApp,
  type TestDialect,
  type TestUser,
  testDialects,
} from '../helper.ts';

const REDIS = process.env.TEST_REDIS_URL;
if (!REDIS) console.warn('# Redis-shared rate limit suite SKIPPED: TEST_REDIS_URL is not set (CI sets it).');
const LIMIT = 5;
const FAILURES = 3;

describe('client address grouping', () => {
  it('keeps IPv4 as is, maps IPv4-mapped IPv6 to IPv4, groups IPv6 by /64', () => {
    assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('2001:db8:1:2::1'), '2001:0db8:0001:0002::/64');
    assert.equal(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:0db8:0001:0002::/64');
    assert.notEqual(addressKey('2001:db8:1:3::1'), addressKey('2001:db8:1:2::1'));
    assert.equal(addressKey('::1'), '0000:0000:0000:0000::/64');
  });
});

for (const dialect of testDialects()) {
  describe(`Rate limits, in-process [${dialect.name}]`, () => {
    let t: TestApp;
    let user: TestUser;

    before(async () => {
      t = await startTestApp(dialect, { RATE_LIMIT_PER_MINUTE: LIMIT, LOGIN_FAILURES_PER_MINUTE: FAILURES });
      user = await t.createUser('limited_user');
    });
    after(async () => t?.close());

    it('limits each token to RATE_LIMIT_PER_MINUTE with RateLimit-* headers, then 429 rate_limited in the envelope', async () => {
      const codes: number[] = [];
      for (let i = 0; i < LIMIT; i++) {
        const res = await t.inject({ method: 'GET', url: '/me', token: user.token });
        codes.push(res.statusCode);
        assert.equal(res.headers['ratelimit-limit'], String(LIMIT));
        assert.equal(res.headers['ratelimit-remaining'], String(LIMIT - 1 - i));
        assert.ok(Number(res.headers['ratelimit-reset']) > 0);
      }
      assert.deepEqual(codes, Array(LIMIT).fill(200));
      const over = await t.inject({ method: 'GET', url: '/me', token: user.token });
      assert.equal(over.statusCode, 429);
      const b = body(over);
      assert.equal(b.status, 'ERROR');
      assert.equal(b.error.code, 'rate_limited');
      assert.equal(typeof b.error.message, 'string');
      assert.equal(typeof b.timestamp, 'number');
      assert.ok(Number(over.headers['retry-after']) > 0);
      assert.equal(over.headers['ratelimit-remaining'], '0');
      // Another token has its own budget.
      const other = await t.inject({ method: 'GET', url: `/users/${user.uuid}`, token: t.guest });
      assert.equal(other.statusCode, 200);
    });

    it('exempts /health, /ready, /metrics, /openapi.json and /docs', async () => {
      for (const url of ['/health', '/ready', '/metrics', '/openapi.json', '/docs']) {
        for (let i = 0; i < LIMIT + 2; i++) {
          const res = await t.inject({ method: 'GET', url, headers: { 'x-forwarded-for': '198.51.100.1' } });
          assert.ok(res.statusCode < 400, `${url} answered ${res.statusCode}`);
          assert.equal(res.headers['ratelimit-limit'], undefined);
        }
      }
    });

    it('the token endpoint is limited per address and keeps the RFC 6749 error shape', async () => {
      const remoteAddress = '192.0.2.50';
      let last = await t.inject({ method: 'POST', url: '/oauth/token', remoteAddress, payload: {} });
      for (let i = 0; i < LIMIT; i++) {
        last = await t.inject({ method: 'POST', url: '/oauth/token', remoteAddress, payload: {} });
      }
      assert.equal(last.statusCode, 429);
      assert.equal(body(last).error, 'rate_limited');
      assert.ok(Number(last.headers['retry-after']) > 0);
    });

    it('failed logins: per account, the right password is refused too once over the limit', async () => {
      const victim = await t.createUser('victim_user');
      const attempt = (password: string, i: number) =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress: `10.1.0.${i}`,
          payload: {
            grant_type: 'password',
            username: victim.username,
            password,
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
      // Successful logins do not count.
      for (let i = 0; i < FAILURES + 1; i++)
        assert.equal((await attempt(victim.password, 100 + i)).statusCode, 200);
      for (let i = 0; i < FAILURES; i++) assert.equal((await attempt('wrong password', i)).statusCode, 400);
      // Different addresses and a different spelling of the account do not help: through the email the right
      // password is refused too, as a wrong one, and the answer is the one an unknown email gets, so locking a
      // username does not tell anyone which email is its own.
      const byEmail = (username: string, password: string, address: string) =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress: address,
          payload: {
            grant_type: 'password',
            username,
            password,
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
      const blocked = await byEmail(victim.email.toUpperCase(), victim.password, '10.1.0.99');
      assert.equal(blocked.statusCode, 400, blocked.body);
      assert.equal(body(blocked).error, 'invalid_grant');
      assert.equal(body(blocked).access_token, undefined);
      const unknown = await byEmail('nobody_at_all@example.com', 'wrong again', '10.1.0.96');
      assert.deepEqual(
        { status: blocked.statusCode, body: body(blocked), retry: blocked.headers['retry-after'] },
        { status: unknown.statusCode, body: body(unknown), retry: unknown.headers['retry-after'] },
      );
      const right = await attempt(victim.password, 98);
      assert.equal(right.statusCode, 429);
      assert.equal(body(right).error, 'rate_limited');
      assert.ok(Number(right.headers['retry-after']) >= 1);
      // Other accounts are not affected.
      const other = await t.createUser('bystander_user');
      const ok = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        remoteAddress: '10.1.0.97',
        payload: {
          grant_type: 'password',
          username: other.username,
          password: other.password,
          client_id: t.client.id,
          client_secret: t.client.secret,
        },
      });
      assert.equal(ok.statusCode, 200);
    });

    it('failed logins: per address; a rotated X-Forwarded-For does not bypass it without TRUST_PROXY', async () => {
      const codes: number[] = [];
      for (let i = 0; i < FAILURES + 2; i++) {
        const res = await t.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress: '172.16.5.5',
          headers: { 'x-forwarded-for': `203.0.113.${i + 1}` },
          payload: {
            grant_type: 'password',
            username: `guess_${i}`,
            password: 'guess',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
        codes.push(res.statusCode);
      }
      assert.deepEqual(codes, [...Array(FAILURES).fill(400), 429, 429]);
    });

    it('failed logins: IPv6 addresses of one /64 share a counter', async () => {
      const codes: number[] = [];
      for (let i = 0; i < FAILURES + 1; i++) {
        const res = await t.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress: `2001:db8:aa:bb::${i + 1}`,
          payload: {
            grant_type: 'password',
            username: `v6guess_${i}`,
            password: 'guess',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
        codes.push(res.statusCode);
      }
      assert.deepEqual(codes, [...Array(FAILURES).fill(400), 429]);
    });
  });

  describe(`Rate limits behind a trusted proxy [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { LOGIN_FAILURES_PER_MINUTE: 2, TRUST_PROXY: true });
    });
    after(async () => t?.close());

    it('with TRUST_PROXY the address comes from X-Forwarded-For', async () => {
      const attempt = (xff: string, i: number) =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'x-forwarded-for': xff },
          payload: {
            grant_type: 'password',
            username: `proxied_${i}`,
            password: 'guess',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
      assert.equal((await attempt('198.51.100.1', 1)).statusCode, 400);
      assert.equal((await attempt('198.51.100.1', 2)).statusCode, 400);
      assert.equal((await attempt('198.51.100.1', 3)).statusCode, 429);
      assert.equal((await attempt('198.51.100.2', 4)).statusCode, 400);
    });
  });

  describe(`Rate limits shared through Redis [${dialect.name}]`, {
    skip: REDIS ? false : 'TEST_REDIS_URL is not set',
  }, () => {
    let t: TestApp;
    let second: FastifyInstance;
    let closeSecond: () => Promise<void>;
    const prefix = `test:${process.pid}:${randomBytes(4).toString('hex')}:`;

    before(async () => {
      const overrides = {
        REDIS_URL: REDIS,
        REDIS_KEY_PREFIX: prefix,
        RATE_LIMIT_PER_MINUTE: LIMIT,
        LOGIN_FAILURES_PER_MINUTE: FAILURES,
      };
      t = await startTestApp(dialect, overrides);
      // A second API process: same database, same Redis.
      const handle = connectDatabase(t.url, { synchronous: 'NORMAL', poolSize: 2 });
      const built = await buildApp(
        loadConfig({}, { DATABASE_URL: t.url, LOG_LEVEL: 'silent', ...overrides }),
        {
          handle,
          skipMigrations: true,
          logger: false,
        },
      );
      second = built.app;
      await second.ready();
      closeSecond = async () => {
        await second.close();
        await handle.db.destroy();
      };
    });
    after(async () => {
      await closeSecond?.();
      await t?.close();
    });

    it('two processes together admit no more than the per-token limit', async () => {
      const user = await t.createUser('shared_user');
      const headers = { authorization: `Bearer ${user.token}` };
      const codes: number[] = [];
      for (let i = 0; i < LIMIT * 2; i++) {
        const app = i % 2 === 0 ? t.app : second;
        codes.push((await app.inject({ method: 'GET', url: '/me', headers })).statusCode);
      }
      assert.equal(codes.filter((c) => c === 200).length, LIMIT, codes.join(','));
      assert.equal(codes.filter((c) => c === 429).length, LIMIT);
      const over = await second.inject({ method: 'GET', url: '/me', headers });
      assert.equal(JSON.parse(over.body).error.code, 'rate_limited');
    });

    it("a 429's Retry-After is the typed login's and the address's wait, never the account's", async () => {
      // The account's counter exists only for a login that belongs to an account: its longer wait on the 429 of the
      // email would tell whoever locked the username that the email is that account's (a security review's finding).
      const victim = await t.createUser('retry_victim');
      const wrong = (username: string, i: number) =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          remoteAddress: `10.12.${i}.1`,
          payload: {
            grant_type: 'password',
            username,
            password: 'wrong',
            client_id: t.client.id,
            client_secret: t.client.secret,
          },
        });
      for (let i = 0; i <= FAILURES; i++) await wrong(victim.username, i);
      // As if the account's window had started later than the email's: its counter now resets in 10 minutes.
      const redis = new Redis(REDIS as string);
      const account = `acct:${createHash('sha256').update(`user:${victim.uuid}`).digest('base64url')}`;
      assert.equal(await redis.pexpire(`${prefix}login:${account}`, 600_000), 1);
      await redis.quit();
      const lastOf = async (username: string, base: number) => {
        let res = await wrong(username, base);
        for (let i = 1; i <= FAILURES; i++) res = await wrong(username, base + i);
        return res;
      };
      const own = await lastOf(victim.email, 100);
      const unknown = await lastOf('nobody_retry@example.com', 150);
      assert.equal(own.statusCode, 429, own.body);
      assert.equal(unknown.statusCode, 429, unknown.body);
      assert.ok(Number(own.headers['retry-after']) <= 60, `Retry-After ${own.headers['retry-after']}`);
      assert.ok(Math.abs(Number(own.headers['retry-after']) - Number(unknown.headers['retry-after'])) <= 2);
      assert.equal(body(own).error, body(unknown).error);
    });

    it('two processes together admit no more than the login-failure limit per account', async () => {
      const victim = await t.createUser('shared_victim');
      const codes: number[] = [];
      const attempts = [];
      for (let i = 0; i < FAILURES * 3; i++) {
        const app = i % 2 === 0 ? t.app : second;
        attempts.push(
          app.inject({
            method: 'POST',
            url: '/oauth/token',
            remoteAddress: `10.9.${i}.1`,
            payload: {
              grant_type: 'password',
              username: victim.username,
              password: 'wrong',
              client_id: t.client.id,
              client_secret: t.client.secret,
            },
          }),
        );
      }
      // Sent in parallel: the counters are reserved atomically, so racing guesses cannot exceed the limit.
      for (const res of await Promise.all(attempts)) codes.push(res.statusCode);
      assert.equal(codes.filter((c) => c === 400).length, FAILURES, codes.join(','));
      assert.equal(codes.filter((c) => c === 429).length, FAILURES * 2);
    });
  });
}

describe('an unreachable Redis', () => {
  let t: TestApp;
  before(async () => {
    // Nothing listens on this port: every Redis command fails after ioredis's retries.
    t = await startTestApp(testDialects()[0] as TestDialect, {
      REDIS_URL: 'redis://127.0.0.1:1',
      RATE_LIMIT_PER_MINUTE: LIMIT,
    });
  });
  after(async () => t?.close());

  it('the API keeps answering, and the password grant refuses with 503 rather than allowing unlimited guesses', async () => {
    const user = await t.createUser('redis_down_user');
    assert.equal((await t.inject({ method: 'GET', url: '/me', token: user.token })).statusCode, 200);
    const res = await t.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: {
        grant_type: 'password',
        username: user.username,
        password: user.password,
        client_id: t.client.id,
        client_secret: t.client.secret,
      },
    });
    assert.equal(res.statusCode, 503);
    assert.equal(body(res).error, 'temporarily_unavailable');
    assert.equal(res.headers['retry-after'], '1');
  });
});
