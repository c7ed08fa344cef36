import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Context } from '../../src/context.ts';
import { uuidv7 } from '../../src/db/time.ts';
import { ERROR_STATUS } from '../../src/http/errors.ts';
import { body, startTestApp, type TestApp, type TestDialect, testDialects } from '../helper.ts';
import { ACCESS_TABLE, type AccessRow } from './access-table.ts';
import { fastUser, mediaUpload, type WorldUser } from './world.ts';

/** What an error body must never show: stack frames, SQL, engine codes and messages, file paths. */
const LEAKS: [string, RegExp][] = [
  ['stack frame', /\bat [^\s"]+ \(|\bat (file|node):|\.stack\b|"stack"/],
  [
    'SQL statement',
    /\bselect\b.{0,120}\bfrom\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\s+"?\w+"?\s+set\b/i,
  ],
  ['engine code', /SQLITE_|ERR_SQLITE|\bsqlite3?\b|\bPG[A-Z_]*ERROR|\b(42P01|42703|23505|22P02)\b/i],
  [
    'engine message',
    /no such (table|column)|syntax error|near "|relation "|column "|violates|duplicate key/i,
  ],
  ['file path', /\/work\/|\/home\/|\/tmp\/|node_modules|[\w-]+\.(ts|js|mjs):\d+|file:\/\//],
  ['library name', /\bkysely\b|\bfastify\b|\bajv\b|\bnode:sqlite\b/i],
];

function leaksOf(text: string): string[] {
  return LEAKS.filter(([, re]) => re.test(text)).map(([name]) => name);
}

/** Strings that would be SQL, FTS or path syntax if anything reached the engine as text. */
const BAD_VALUES = [
  'not-a-uuid',
  "'",
  "' OR 1=1 --",
  '"; DROP TABLE users; --',
  '%',
  '\\',
  'NEAR(a b)',
  '*',
  '..%2F..%2Fetc%2Fpasswd',
  '😀',
  '\u0000',
  'x'.repeat(300),
];

function withParams(path: string, value: () => string): string {
  return path.replace(/\{name\}/g, 'like').replace(/\{[^}]+\}/g, value);
}

/** Request bodies that are broken in every way a body can be. */
function badBodies(): { what: string; payload: string | Buffer; type: string }[] {
  let deep = '1';
  for (let i = 0; i < 2000; i++) deep = `{"a":${deep}}`;
  return [
    { what: 'malformed JSON', payload: '{"body": "x",', type: 'application/json' },
    { what: 'empty JSON', payload: '', type: 'application/json' },
    { what: 'JSON null', payload: 'null', type: 'application/json' },
    { what: 'JSON array', payload: '[1,2,3]', type: 'application/json' },
    { what: 'JSON string', payload: '"text"', type: 'application/json' },
    { what: 'deeply nested JSON', payload: deep, type: 'application/json' },
    {
      what: '__proto__',
      payload: '{"__proto__":{"role":"admin"},"constructor":{"prototype":{"x":1}}}',
      type: 'application/json',
    },
    {
      what: 'wrong types',
      payload: '{"body":123,"name":[],"user_uuid":{},"visibility":true,"points":"x"}',
      type: 'application/json',
    },
    { what: 'text/plain', payload: 'hello', type: 'text/plain' },
    { what: 'xml', payload: '<a>1</a>', type: 'application/xml' },
    { what: 'bad charset', payload: '{}', type: 'application/json; charset=ebcdic' },
    {
      what: 'invalid UTF-8',
      payload: Buffer.from([0x7b, 0x22, 0x62, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      type: 'application/json',
    },
    {
      what: 'deep form keys',
      payload: 'a[b][c][d][e][f]=1&__proto__[x]=1&body=x&body=y',
      type: 'application/x-www-form-urlencoded',
    },
    {
      what: '2 MiB JSON',
      payload: JSON.stringify({ body: 'x'.repeat(2 * 1024 * 1024) }),
      type: 'application/json',
    },
    { what: 'multipart without boundary', payload: 'x', type: 'multipart/form-data' },
  ];
}

const GET_QUERIES = [
  'bogus=1',
  'limit=-5',
  'limit=abc',
  'limit=100000',
  'offset=1e309',
  'page=0',
  'page=1&offset=1',
  'limit=1&limit=2',
  "sortby[name';--]=asc",
  'sortby[created_at]=sideways',
  "filterby[body'][eq]=1",
  'filterby[name][like]=%27%20OR%201%3D1%20--',
  'filterby[name][regex]=.*',
  'filterby[created_at][gt]=yesterday',
  'uuids=not-a-uuid',
  'query=',
  `query=${'q'.repeat(500)}`,
  'query=%22unterminated',
  'query=NEAR(a%20b)%20OR%20*',
  'language=xx',
  'order=password_hash:desc',
  'a[b][c][d][e]=1',
];

for (const dialect of testDialects()) {
  describe(`errors and headers [${dialect.name}]`, () => {
    let t: TestApp;
    let admin: WorldUser;
    let owner: WorldUser;
    const answers: { what: string; row?: AccessRow; authed: boolean; res: LightMyRequestResponse }[] = [];

    before(async () => {
      t = await startTestApp(dialect, {
        ENABLED_OPERATIONS: ['all'],
        RATE_LIMIT_PER_MINUTE: 1_000_000,
        REGISTRATIONS_PER_MINUTE: 1_000_000,
        PASSWORD_CHANGES_PER_MINUTE: 1_000_000,
        MEDIA_MAX_BYTES: 1000,
      });
      admin = await fastUser(t, 'admin');
      owner = await fastUser(t);
      const post = async (
        what: string,
        opts: Parameters<TestApp['inject']>[0],
        row?: AccessRow,
        authed = true,
      ) => {
        answers.push({ what, row, authed, res: await t.inject(opts) });
      };
      for (const row of ACCESS_TABLE) {
        const method = row.method;
        // Bad path parameters on every route with parameters.
        if (/\{/.test(row.path)) {
          for (const v of BAD_VALUES) {
            const url = withParams(row.path, () => encodeURIComponent(v));
            await post(
              `${method} ${url.slice(0, 80)}`,
              { method, url, token: admin.token, payload: method === 'GET' ? undefined : {} },
              row,
            );
          }
        }
        const good = withParams(row.path, () => uuidv7());
        // Unknown and malformed query parameters on every route.
        for (const q of method === 'GET' ? GET_QUERIES : GET_QUERIES.slice(0, 2)) {
          await post(
            `${method} ${good}?${q.slice(0, 60)}`,
            { method, url: `${good}?${q}`, token: admin.token, payload: method === 'GET' ? undefined : {} },
            row,
          );
        }
        // Broken bodies on every write.
        if (method !== 'GET') {
          for (const b of badBodies()) {
            await post(
              `${method} ${good} with ${b.what}`,
              {
                method,
                url: good,
                token: admin.token,
                payload: b.payload,
                headers: { 'content-type': b.type },
              },
              row,
            );
          }
        }
        // Without a token.
        await post(`${method} ${good} without a token`, { method, url: good }, row, false);
      }
      // A media upload over MEDIA_MAX_BYTES.
      const big = mediaUpload({ title: 'big' });
      const padded = Buffer.concat([
        big.payload.subarray(0, big.payload.length - 20),
        Buffer.alloc(5000, 1),
        big.payload.subarray(big.payload.length - 20),
      ]);
      await post('POST /media over the limit', {
        method: 'POST',
        url: '/media',
        token: owner.token,
        payload: padded,
        headers: big.headers,
      });
      // Unknown routes and other methods on known paths.
      for (const url of [
        '/nope',
        '/posts/x/y/z',
        `/${'a'.repeat(5000)}`,
        '/%ZZ',
        '/posts/%E0%A4%A',
        '/..%2F..%2Fetc%2Fpasswd',
        '/search/%00',
      ]) {
        await post(`GET ${url.slice(0, 40)}`, { method: 'GET', url, token: owner.token });
      }
      const paths = new Map<string, Set<string>>();
      for (const row of ACCESS_TABLE) {
        const set = paths.get(row.path) ?? new Set();
        set.add(row.method);
        paths.set(row.path, set);
      }
      const served = ACCESS_TABLE.map((r) => ({
        method: r.method as string,
        re: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      }));
      for (const [path, methods] of paths) {
        for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
          if (methods.has(m)) continue;
          const url = withParams(path, () => uuidv7());
          // GET /tags/create is GET /tags/{tag_uuid} with the uuid "create": not a 405.
          if (served.some((r) => r.method === m && r.re.test(url))) continue;
          await post(`405 ${m} ${url}`, {
            method: m,
            url,
            token: owner.token,
            payload: m === 'GET' ? undefined : {},
          });
        }
      }
    });
    after(async () => t?.close());

    it('never answers bad input with a 5xx', (ctx) => {
      ctx.diagnostic(`${answers.length} broken requests`);
      const bad = answers
        .filter((a) => a.res.statusCode >= 500)
        .map((a) => `${a.what}: ${a.res.statusCode} ${a.res.body.slice(0, 200)}`);
      assert.ok(answers.length > 1000, `${answers.length} requests`);
      assert.deepEqual(bad, []);
    });

    it('shows no stack, SQL, engine code or file path in any error body', () => {
      const leaks: string[] = [];
      for (const a of answers) {
        if (a.res.statusCode < 400) continue;
        const found = leaksOf(a.res.body);
        if (found.length > 0)
          leaks.push(`${a.what} -> ${a.res.statusCode}: ${found.join(', ')}: ${a.res.body.slice(0, 300)}`);
      }
      assert.deepEqual(leaks, []);
    });

    it('answers every error in the envelope (RFC 6749 shape on /oauth), with a code that matches its status', () => {
      const wrong: string[] = [];
      for (const a of answers) {
        if (a.res.statusCode < 400) continue;
        let b: { status?: string; error?: { code?: string; request_id?: string } | string };
        try {
          b = body(a.res);
        } catch {
          wrong.push(`${a.what}: not JSON: ${a.res.body.slice(0, 100)}`);
          continue;
        }
        if (typeof b.error === 'string') {
          if (!a.row?.path.startsWith('/oauth/')) wrong.push(`${a.what}: OAuth shape outside /oauth`);
          continue;
        }
        const code = b.error?.code as keyof typeof ERROR_STATUS | undefined;
        if (b.status !== 'ERROR' || !code || ERROR_STATUS[code] !== a.res.statusCode) {
          wrong.push(`${a.what}: ${a.res.statusCode} ${a.res.body.slice(0, 150)}`);
        } else if (b.error?.request_id !== a.res.headers['x-request-id']) {
          wrong.push(`${a.what}: request_id differs from X-Request-Id`);
        }
        if (!/application\/json/.test(String(a.res.headers['content-type'])))
          wrong.push(`${a.what}: content-type`);
        if (a.res.headers['x-powered-by'] !== undefined) wrong.push(`${a.what}: X-Powered-By`);
      }
      assert.deepEqual(wrong.slice(0, 30), []);
    });

    it('answers huge bodies 413, other encodings 415, other methods 405 with Allow', () => {
      const find = (what: string) => answers.filter((a) => a.what.endsWith(what));
      for (const a of find('with 2 MiB JSON')) assert.equal(a.res.statusCode, 413, a.what);
      for (const a of find('with xml')) {
        // The access checks run first: only a caller who may reach the handler learns about the body.
        assert.ok([415, 404, 403].includes(a.res.statusCode), `${a.what}: ${a.res.statusCode}`);
      }
      assert.ok(find('with xml').some((a) => a.res.statusCode === 415));
      const upload = answers.find((a) => a.what === 'POST /media over the limit');
      assert.equal(upload?.res.statusCode, 413, upload?.res.body);
      const other = answers.filter((a) => a.what.startsWith('405 '));
      assert.ok(other.length > 50);
      for (const a of other) {
        assert.equal(a.res.statusCode, 405, `${a.what}: ${a.res.body}`);
        assert.ok(a.res.headers.allow, `${a.what}: no Allow header`);
      }
    });

    it('sends Cache-Control: no-store on every answer to an authenticated request', async () => {
      const missing = answers
        .filter((a) => a.authed && a.row && a.row.access !== 'none' && a.res.statusCode !== 401)
        .filter((a) => !String(a.res.headers['cache-control'] ?? '').includes('no-store'))
        .map((a) => `${a.what}: ${a.res.statusCode} ${a.res.headers['cache-control']}`);
      assert.deepEqual(missing.slice(0, 20), []);
      for (const url of ['/me', '/karma', '/messages', '/connections', `/users/${owner.uuid}`, '/tags']) {
        const res = await t.inject({ method: 'GET', url, token: owner.token });
        assert.equal(res.statusCode, 200, url);
        assert.match(String(res.headers['cache-control']), /no-store/, url);
      }
      const token = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: { grant_type: 'client_credentials', client_id: t.client.id, client_secret: t.client.secret },
      });
      assert.match(String(token.headers['cache-control']), /no-store/);
    });
  });

  describe(`a handler that throws [${dialect.name}]`, () => {
    let app: FastifyInstance;
    let drop: () => Promise<void>;
    before(async () => {
      const db = await (dialect as TestDialect).create();
      drop = db.drop;
      const config = loadConfig({}, { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
      const built = await buildApp(config, { logger: false });
      app = built.app;
      const ctx: Context = built.ctx;
      const none = { config: { access: 'none' as const } };
      // Registered before ready(), as a module's route would be.
      app.get('/boom/plain', none, async () => {
        throw new Error('boom at /work/main/src/secret.ts:12:3 select * from users where password_hash = 1');
      });
      app.get('/boom/sql', none, async () => {
        await sql`select secret_column from no_such_table`.execute(ctx.db);
        return { never: true };
      });
      app.get('/boom/type', none, async () => {
        const x = undefined as unknown as { y: { z: number } };
        return { z: x.y.z };
      });
      app.get('/boom/sync', none, () => {
        throw new RangeError('sync boom SQLITE_ERROR');
      });
      app.get('/boom/string', none, async () => {
        throw 'a thrown string /work/main/src/x.ts';
      });
      app.get('/boom/reply', none, async (_request, reply) => {
        reply.send({ status: 'OK' });
        throw new Error('after the answer was sent');
      });
      await app.ready();
    });
    after(async () => {
      await app?.close();
      await drop?.();
    });

    it('answers 500 internal_error with the request id, leaks nothing, and serves the next request', async () => {
      for (const url of ['/boom/plain', '/boom/sql', '/boom/type', '/boom/sync', '/boom/string']) {
        const res = await app.inject({
          method: 'GET',
          url,
          headers: { 'x-request-id': `req-${url.slice(6)}` },
        });
        assert.equal(res.statusCode, 500, `${url}: ${res.body}`);
        const b = body(res);
        assert.equal(b.status, 'ERROR');
        assert.equal(b.error.code, 'internal_error');
        assert.equal(b.error.request_id, `req-${url.slice(6)}`);
        assert.equal(typeof b.timestamp, 'number');
        assert.deepEqual(leaksOf(res.body), [], `${url}: ${res.body}`);
        assert.doesNotMatch(res.body, /boom|secret|no_such_table|thrown string/);
        const next = await app.inject({ method: 'GET', url: '/health' });
        assert.equal(next.statusCode, 200, `after ${url}`);
      }
    });

    it('keeps serving while many requests fail at once', async () => {
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          app.inject({
            method: 'GET',
            url: i % 3 === 0 ? '/health' : i % 3 === 1 ? '/boom/sql' : '/boom/plain',
          }),
        ),
      );
      for (const [i, res] of results.entries()) assert.equal(res.statusCode, i % 3 === 0 ? 200 : 500);
      const late = await app.inject({ method: 'GET', url: '/boom/reply' });
      assert.equal(late.statusCode, 200, 'an error after the answer does not replace it');
      assert.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200);
    });
  });
}
