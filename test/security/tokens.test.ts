import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { issueTokens } from '../../src/modules/auth/auth.service.ts';
import { generateToken, hashToken } from '../../src/modules/auth/token.ts';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';

/** Every row of every table (FTS shadow tables and migration bookkeeping included), as one searchable text. */
async function dumpDatabase(t: TestApp): Promise<{ text: string; tables: number }> {
  const names =
    t.dialect === 'sqlite'
      ? (
          await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(t.ctx.db)
        ).rows.map((r) => r.name)
      : (
          await sql<{ name: string }>`select table_name as name from information_schema.tables
            where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(t.ctx.db)
        ).rows.map((r) => r.name);
  const parts: string[] = [];
  for (const name of names) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(t.ctx.db))
      .rows;
    for (const row of rows) {
      for (const v of Object.values(row)) {
        // Binary cells (FTS index pages, bytea) are searched byte for byte.
        parts.push(v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : String(v));
      }
    }
  }
  return { text: parts.join('\n'), tables: names.length };
}

function form(fields: Record<string, string>): { payload: string; headers: Record<string, string> } {
  return {
    payload: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  };
}

/** An answer without the parts that differ between identical answers. */
function shape(res: LightMyRequestResponse): string {
  return `${res.statusCode} ${res.body}`;
}

describe('token generation', () => {
  it('gives 10,000 distinct 256-bit base64url tokens', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const token = generateToken();
      assert.match(token, /^[A-Za-z0-9_-]{43}$/);
      seen.add(token);
    }
    assert.equal(seen.size, 10_000);
    assert.equal(new Set([...seen].map(hashToken)).size, 10_000);
  });
});

for (const dialect of testDialects()) {
  describe(`tokens and logins [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { LOGIN_FAILURES_PER_MINUTE: 3, RATE_LIMIT_PER_MINUTE: 1_000_000 });
    });
    after(async () => t?.close());

    const login = (
      username: string,
      password: string,
      extra: { remoteAddress?: string; headers?: Record<string, string> } = {},
    ) => {
      const f = form({
        grant_type: 'password',
        username,
        password,
        client_id: t.client.id,
        client_secret: t.client.secret,
      });
      return t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: f.payload,
        headers: { ...f.headers, ...extra.headers },
        ...(extra.remoteAddress ? { remoteAddress: extra.remoteAddress } : {}),
      });
    };

    it('stores no raw token, refresh token, client secret or password in the database', async () => {
      const password = `Pw-${randomBytes(12).toString('hex')}`;
      const newPassword = `Pw2-${randomBytes(12).toString('hex')}`;
      const username = `dump${randomBytes(4).toString('hex')}`;
      const reg = await t.inject({
        method: 'POST',
        url: '/users',
        token: t.guest,
        payload: { username, email: `${username}@dump.example`, password },
      });
      assert.equal(reg.statusCode, 201, reg.body);
      const first = await login(username, password, { remoteAddress: '10.9.0.1' });
      assert.equal(first.statusCode, 200, first.body);
      const tokens = body(first);
      const rotated = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token,
          client_id: t.client.id,
          client_secret: t.client.secret,
        }),
      });
      assert.equal(rotated.statusCode, 200, rotated.body);
      const guest = body(
        await t.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: {
            authorization: `Basic ${Buffer.from(`${t.client.id}:${t.client.secret}`).toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          payload: 'grant_type=client_credentials',
        }),
      );
      const changed = await t.inject({
        method: 'POST',
        url: `/users/${body(reg).data.uuid}/update`,
        token: body(rotated).access_token,
        payload: { password: newPassword },
      });
      assert.equal(changed.statusCode, 200, changed.body);
      const helperUser = await t.createUser();

      const secrets: Record<string, string> = {
        'access token': tokens.access_token,
        'refresh token': tokens.refresh_token,
        'rotated access token': body(rotated).access_token,
        'rotated refresh token': body(rotated).refresh_token,
        'guest token': guest.access_token,
        'helper token': helperUser.token,
        'client secret': t.client.secret,
        password,
        'new password': newPassword,
        'helper password': helperUser.password,
      };
      const dump = await dumpDatabase(t);
      assert.ok(dump.tables >= 10, `${dump.tables} tables dumped`);
      // The dump is real: the stored forms are there.
      assert.ok(dump.text.includes(hashToken(tokens.access_token)), 'the token hash is in the dump');
      assert.ok(dump.text.includes('$argon2id$'), 'the password hashes are in the dump');
      for (const [what, raw] of Object.entries(secrets)) {
        assert.ok(raw && raw.length >= 8, what);
        assert.equal(dump.text.includes(raw), false, `the raw ${what} is stored`);
      }
    });

    it('revokes a refresh token family when a spent refresh token comes back', async () => {
      const u = await t.createUser();
      const first = body(await login(u.username, u.password, { remoteAddress: '10.9.0.2' }));
      const refresh = (token: string) =>
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          ...form({
            grant_type: 'refresh_token',
            refresh_token: token,
            client_id: t.client.id,
            client_secret: t.client.secret,
          }),
        });
      const second = await refresh(first.refresh_token);
      assert.equal(second.statusCode, 200);
      const replay = await refresh(first.refresh_token);
      assert.equal(replay.statusCode, 400);
      assert.equal(body(replay).error, 'invalid_grant');
      const me = await t.inject({ method: 'GET', url: '/me', token: body(second).access_token });
      assert.equal(me.statusCode, 401, 'the family of a replayed refresh token is revoked');
    });

    it('does not let X-Forwarded-For rotation escape the address limit (TRUST_PROXY off)', async () => {
      const statuses: number[] = [];
      for (let i = 1; i <= 5; i++) {
        const res = await login(`ghost-xff-${i}`, 'wrong password', {
          remoteAddress: '10.9.1.1',
          headers: { 'x-forwarded-for': `203.0.113.${i}`, 'x-real-ip': `198.51.100.${i}` },
        });
        statuses.push(res.statusCode);
      }
      assert.deepEqual(statuses, [400, 400, 400, 429, 429]);
    });

    it('counts every IPv6 address of one /64 as one address', async () => {
      const statuses: number[] = [];
      for (let i = 1; i <= 5; i++) {
        const res = await login(`ghost-v6-${i}`, 'wrong password', {
          remoteAddress: `2001:db8:aa:1:${i.toString(16)}::${(i * 7919).toString(16)}`,
        });
        statuses.push(res.statusCode);
      }
      assert.deepEqual(statuses, [400, 400, 400, 429, 429]);
      const other = await login('ghost-v6-other', 'wrong password', { remoteAddress: '2001:db8:aa:2::1' });
      assert.equal(other.statusCode, 400, 'another /64 has its own budget');
      assert.equal(body(other).error, 'invalid_grant');
    });

    it('gives path variants of /oauth/token no password check beyond the limit', async () => {
      const u = await t.createUser();
      const remoteAddress = '10.9.2.1';
      for (let i = 0; i < 3; i++) {
        const res = await login(u.username, 'wrong password', { remoteAddress });
        assert.equal(body(res).error, 'invalid_grant');
      }
      const variants = [
        '/OAUTH/TOKEN',
        '/oauth/TOKEN',
        '/Oauth/Token',
        '/oauth/token/',
        '/oauth/token//',
        '/oauth%2Ftoken',
        '/oauth%2ftoken',
        '/oauth/token%2F',
        '//oauth/token',
        '/oauth//token',
        '/./oauth/token',
        '/oauth/./token',
        '/oauth/x/../token',
        '/%6Fauth/token',
        '/oauth/%74oken',
        '/oauth/token;x=1',
        '/oauth/token%00',
        '/oauth/token?',
        '/oauth/token#x',
      ];
      const leaks: string[] = [];
      for (const url of variants) {
        for (const password of ['wrong password', u.password]) {
          const res = await t.inject({
            method: 'POST',
            url,
            remoteAddress,
            ...form({
              grant_type: 'password',
              username: u.username,
              password,
              client_id: t.client.id,
              client_secret: t.client.secret,
            }),
          });
          const text = res.body;
          // A password check shows as invalid_grant (wrong) or a token (right); the limiter answers 429 first.
          if (res.statusCode === 200 || /invalid_grant|access_token/.test(text))
            leaks.push(`${url}: ${res.statusCode} ${text}`);
          if (res.statusCode >= 500) leaks.push(`${url}: ${res.statusCode}`);
        }
      }
      assert.deepEqual(leaks, []);
      const right = await login(u.username, u.password, { remoteAddress: '10.9.2.2' });
      assert.equal(right.statusCode, 429, 'the account stays locked even with the right password');
    });

    it('refuses an expired token one second after expiry', async () => {
      // Tokens issued exactly as the service does with ACCESS_TOKEN_TTL_SECONDS=1.
      const shortLived = { config: { ...t.ctx.config, ACCESS_TOKEN_TTL_SECONDS: 1 } };
      const u = await t.createUser();
      const user = (await issueTokens(shortLived, t.ctx.db, t.client.id, u.uuid)).access_token;
      const guest = (await issueTokens(shortLived, t.ctx.db, t.client.id, null)).access_token;
      assert.equal(
        (await t.inject({ method: 'GET', url: '/me', token: user })).statusCode,
        200,
        'valid at first',
      );
      assert.equal((await t.inject({ method: 'GET', url: '/tags', token: guest })).statusCode, 200);
      await sleep(1100);
      const late = await t.inject({ method: 'GET', url: '/me', token: user });
      assert.equal(late.statusCode, 401);
      assert.equal(body(late).error.code, 'unauthenticated');
      assert.equal(late.headers['www-authenticate'], 'Bearer');
      const guestLate = await t.inject({ method: 'GET', url: '/tags', token: guest });
      assert.equal(guestLate.statusCode, 401, 'guest tokens expire too');
    });
  });
}

// Timing is measured on SQLite only (the engine adds noise, not signal: the work is the password hash).
describe('unknown user and wrong password', () => {
  const sqlite = testDialects().find((d) => d.name === 'sqlite');
  let t: TestApp;
  before(async () => {
    t = await startTestApp(sqlite as NonNullable<typeof sqlite>, {
      LOGIN_FAILURES_PER_MINUTE: 100_000,
      RATE_LIMIT_PER_MINUTE: 1_000_000,
      TOKEN_REQUESTS_PER_MINUTE: 1_000_000,
    });
  });
  after(async () => t?.close());

  it('answer alike, in alike time (medians within 5 ms over 200 tries each)', async (ctx) => {
    const u = await t.createUser();
    const attempt = async (username: string) => {
      const started = process.hrtime.bigint();
      const res = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({
          grant_type: 'password',
          username,
          password: 'not the password',
          client_id: t.client.id,
          client_secret: t.client.secret,
        }),
      });
      return { ms: Number(process.hrtime.bigint() - started) / 1e6, shape: shape(res) };
    };
    for (let i = 0; i < 5; i++) {
      await attempt(u.username);
      await attempt(`nobody${i}`);
    }
    const median = (xs: number[]) => {
      const s = [...xs].sort((x, y) => x - y);
      return ((s[99] as number) + (s[100] as number)) / 2;
    };
    const shapes = new Set<string>();
    /** One round: 200 tries of each kind, interleaved, so drifts of the machine's load hit both sides alike. */
    const round = async () => {
      const unknown: number[] = [];
      const wrong: number[] = [];
      for (let i = 0; i < 200; i++) {
        const a = await attempt(`nobody-${randomBytes(4).toString('hex')}`);
        const b = await attempt(u.username);
        unknown.push(a.ms);
        wrong.push(b.ms);
        shapes.add(a.shape);
        shapes.add(b.shape);
      }
      return { mu: median(unknown), mw: median(wrong) };
    };
    // A noisy machine (other test files hash passwords at the same time) may skew one round; a real difference
    // (an unknown user answered without a password hash) is 30+ ms and shows in every round.
    let result = await round();
    ctx.diagnostic(
      `median unknown user ${result.mu.toFixed(2)} ms, wrong password ${result.mw.toFixed(2)} ms`,
    );
    if (Math.abs(result.mu - result.mw) >= 5) {
      result = await round();
      ctx.diagnostic(`second round: ${result.mu.toFixed(2)} ms vs ${result.mw.toFixed(2)} ms`);
    }
    assert.equal(shapes.size, 1, `answers differ: ${[...shapes].join(' | ')}`);
    assert.match([...shapes][0] as string, /^400 .*invalid_grant/);
    assert.ok(
      Math.abs(result.mu - result.mw) < 5,
      `medians ${result.mu.toFixed(2)} vs ${result.mw.toFixed(2)} ms`,
    );
  });
});
