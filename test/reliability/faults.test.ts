// Storage faults (docs/reliability.md, Part B): a full SQLite disk, an unreachable PostgreSQL, a statement timeout
// and two writer processes on one SQLite file. Writes answer 503 unavailable (never 500), what can still be read is
// read, nothing is corrupt, and the service recovers by itself when the fault clears.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server as NetServer, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { body, testDialects } from '../helper.ts';
import { CLIENT, call, kill, login, type Server, startServer } from './crash-harness.ts';
import { type LoggedApp, startLoggedApp } from './support.ts';

const dialects = testDialects();
const sqliteDialect = dialects.find((d) => d.name === 'sqlite');
const pgDialect = dialects.find((d) => d.name === 'postgres');

async function post(t: LoggedApp, token: string, text: string) {
  return t.inject({ method: 'POST', url: '/posts', token, payload: { body: text } });
}

function codeOf(res: { body: string }): string | undefined {
  try {
    return JSON.parse(res.body).error?.code;
  } catch {
    return undefined;
  }
}

describe('disk full on SQLite (max_page_count)', { skip: !sqliteDialect }, () => {
  let t: LoggedApp;
  before(async () => {
    t = await startLoggedApp(sqliteDialect as never);
  });
  after(async () => t?.close());

  it('answers writes 503 unavailable, serves reads, stays intact and recovers when space returns', async () => {
    const user = await t.createUser();
    const first = await post(t, user.token, 'before the disk filled #full');
    assert.equal(first.statusCode, 201);
    const firstUuid = body(first).data.uuid;
    await sql.raw('PRAGMA wal_checkpoint(TRUNCATE)').execute(t.ctx.db);
    const pages = Number(
      (await sql<{ page_count: number }>`PRAGMA page_count`.execute(t.ctx.db)).rows[0]?.page_count,
    );
    await sql.raw(`PRAGMA max_page_count = ${pages}`).execute(t.ctx.db);

    const statuses: number[] = [];
    let accepted = 0;
    for (let i = 0; i < 60; i++) {
      const res = await post(
        t,
        user.token,
        `filling ${i} #full ${'lorem ipsum dolor sit amet '.repeat(150)}`,
      );
      statuses.push(res.statusCode);
      if (res.statusCode === 201) accepted++;
      else {
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(codeOf(res), 'unavailable');
        assert.equal(res.headers['retry-after'], '1');
      }
    }
    assert.ok(statuses.includes(503), `writes were refused once the disk was full: ${statuses.join(',')}`);
    assert.ok(!statuses.includes(500));

    // Reads go on while the disk is full.
    const read = await t.inject({ method: 'GET', url: `/posts/${firstUuid}`, token: t.guest });
    assert.equal(read.statusCode, 200, read.body);
    const search = await t.inject({ method: 'GET', url: '/search?query=before', token: t.guest });
    assert.equal(search.statusCode, 200, search.body);
    const tags = await t.inject({ method: 'GET', url: '/tags?filterby[name]=full', token: t.guest });
    assert.equal(tags.statusCode, 200, tags.body);

    const integrity = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(t.ctx.db);
    assert.equal(integrity.rows[0]?.integrity_check, 'ok');
    // A refused write left nothing behind: the posts are exactly the accepted ones, each with its karma record.
    const posts = await t.ctx.db
      .selectFrom('posts')
      .select((e) => e.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    assert.equal(Number(posts?.n), 1 + accepted);
    const unkarmed = await sql<{ n: number }>`SELECT count(*) AS n FROM posts p
      WHERE NOT EXISTS (SELECT 1 FROM karma k WHERE k.source_uuid = p.uuid)`.execute(t.ctx.db);
    assert.equal(Number(unkarmed.rows[0]?.n), 0);

    await sql.raw('PRAGMA max_page_count = 1073741823').execute(t.ctx.db);
    const recovered = await post(t, user.token, 'after the disk was freed #full');
    assert.equal(recovered.statusCode, 201, recovered.body);
    assert.deepEqual(
      t.errors.filter((e) => e.msg === 'unhandled error'),
      [],
    );
  });
});

describe('SQLite write lock held by another process', { skip: !sqliteDialect }, () => {
  let t: LoggedApp;
  before(async () => {
    t = await startLoggedApp(sqliteDialect as never);
  });
  after(async () => t?.close());

  it('answers 503 after the busy timeout, reads go on, and writes work once the lock is released', async () => {
    const user = await t.createUser();
    const first = await post(t, user.token, 'lock test');
    assert.equal(first.statusCode, 201);
    const other = new DatabaseSync(t.url.slice('sqlite:'.length));
    other.exec('BEGIN IMMEDIATE');
    try {
      const started = Date.now();
      const [blocked, token] = await Promise.all([
        post(t, user.token, 'while locked'),
        // The token endpoint writes the token it issues; its 503 keeps the RFC 6749 shape, as its other errors do.
        t.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: {
            authorization: `Basic ${Buffer.from(`${t.client.id}:${t.client.secret}`).toString('base64')}`,
          },
          payload: { grant_type: 'client_credentials' },
        }),
      ]);
      assert.equal(blocked.statusCode, 503, blocked.body);
      assert.equal(codeOf(blocked), 'unavailable');
      assert.ok(Date.now() - started >= 4000, 'the write waited for the busy timeout first');
      assert.equal(token.statusCode, 503, token.body);
      assert.equal(token.headers['retry-after'], '1');
      assert.deepEqual(JSON.parse(token.body), {
        error: 'temporarily_unavailable',
        error_description: 'The service is temporarily unavailable; retry in a moment.',
      });
      const read = await t.inject({ method: 'GET', url: `/posts/${body(first).data.uuid}`, token: t.guest });
      assert.equal(read.statusCode, 200);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    const after = await post(t, user.token, 'after the lock');
    assert.equal(after.statusCode, 201, after.body);
  });
});

describe('two writer processes on one SQLite file', { skip: !sqliteDialect }, () => {
  let dir: string;
  const servers: Server[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'two-writers-'));
  });
  after(async () => {
    for (const s of servers) await kill(s);
    rmSync(dir, { recursive: true, force: true });
  });

  it('never answers 500: parallel writes through both processes all succeed', {
    timeout: 180_000,
  }, async () => {
    const rules = join(dir, 'karma.json');
    writeFileSync(rules, JSON.stringify({ daily_cap: null }));
    const env = {
      DATABASE_URL: `sqlite:${join(dir, 'shared.db')}`,
      BOOTSTRAP_CLIENT: `${CLIENT.id}:${CLIENT.secret}`,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '1000000',
      KARMA_RULES: rules,
    };
    servers.push(await startServer(env));
    servers.push(await startServer(env));
    const [a, b] = servers as [Server, Server];
    const basic = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
    const guest = await call(
      a.base,
      'POST',
      '/oauth/token',
      basic,
      { grant_type: 'client_credentials' },
      true,
    );
    const created = await call(a.base, 'POST', '/users', guest.body.access_token, {
      username: 'two_writers',
      email: 'two@example.test',
      password: 'two-writers-pw',
    });
    assert.equal(created.status, 201);
    const token = await login(b.base, 'two_writers', 'two-writers-pw');
    const statuses = new Map<number, number>();
    const uuids: string[] = [];
    const loop = async (s: Server, w: number) => {
      for (let i = 0; i < 40; i++) {
        const res = await call(s.base, 'POST', '/posts', token, { body: `writer ${w} post ${i} #parallel` });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 201) {
          uuids.push(res.body.data.uuid);
          const r = await call(
            s === a ? b.base : a.base,
            'POST',
            `/posts/${res.body.data.uuid}/emotions`,
            token,
            {
              name: 'like',
            },
          );
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }
    };
    await Promise.all([loop(a, 0), loop(a, 1), loop(a, 2), loop(b, 3), loop(b, 4), loop(b, 5)]);
    console.log(`# two writers: statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    assert.equal(statuses.get(500) ?? 0, 0);
    assert.equal(
      uuids.length,
      240,
      `every post was written: ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    const tag = await call(a.base, 'GET', '/tags?filterby[name]=parallel', token);
    assert.equal(tag.body.data[0]?.associations_count, 240);
  });
});

/** A TCP proxy in front of PostgreSQL that can be cut and restored. */
class TcpProxy {
  private server: NetServer | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = tcpConnect(5432, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  async cut(): Promise<void> {
    const closed = new Promise((r) => this.server?.close(r));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

describe('PostgreSQL unreachable mid-run', { skip: !pgDialect }, () => {
  let t: LoggedApp;
  const proxy = new TcpProxy();
  before(async () => {
    const { url, drop } = await (pgDialect as NonNullable<typeof pgDialect>).create();
    await proxy.start();
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    t = await startLoggedApp(pgDialect as never, {}, { url: proxied.toString(), drop });
  });
  after(async () => {
    await proxy.cut().catch(() => {});
    await proxy.start();
    await t?.close();
    await proxy.cut();
  });

  it('answers 503 unavailable while the database is gone and recovers by itself', {
    timeout: 60_000,
  }, async () => {
    const user = await t.createUser();
    const first = await post(t, user.token, 'before the outage #pg');
    assert.equal(first.statusCode, 201);
    await proxy.cut();
    const during = [
      await post(t, user.token, 'during the outage'),
      await t.inject({ method: 'GET', url: `/posts/${body(first).data.uuid}`, token: user.token }),
      await t.inject({ method: 'GET', url: '/search?query=outage', token: user.token }),
      await t.inject({ method: 'GET', url: '/ready' }),
    ];
    for (const res of during) {
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(codeOf(res), 'unavailable');
    }
    // Liveness does not depend on the database.
    assert.equal((await t.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    await proxy.start();
    const deadline = Date.now() + 15_000;
    let recovered = await post(t, user.token, 'after the outage #pg');
    while (recovered.statusCode !== 201 && Date.now() < deadline) {
      assert.equal(recovered.statusCode, 503, recovered.body);
      await new Promise((r) => setTimeout(r, 200));
      recovered = await post(t, user.token, 'after the outage #pg');
    }
    assert.equal(recovered.statusCode, 201, recovered.body);
    assert.deepEqual(
      t.errors.filter((e) => e.msg === 'unhandled error'),
      [],
    );
  });

  it('terminated backends answer 503 or succeed, never 500, and the next requests succeed', async () => {
    const user = await t.createUser();
    const admin = new pg.Client({ connectionString: process.env.TEST_PG_URL });
    await admin.connect();
    const dbName = new URL(t.url).pathname.slice(1);
    const inFlight = Array.from({ length: 20 }, (_, i) => post(t, user.token, `terminated ${i}`));
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [dbName],
    );
    const results = await Promise.all(inFlight);
    for (const r of results)
      assert.ok(r.statusCode === 201 || r.statusCode === 503, `${r.statusCode} ${r.body}`);
    await admin.end();
    let next = await post(t, user.token, 'after termination');
    for (let i = 0; i < 10 && next.statusCode === 503; i++)
      next = await post(t, user.token, 'after termination');
    assert.equal(next.statusCode, 201, next.body);
  });
});

describe('PostgreSQL statement timeout', { skip: !pgDialect }, () => {
  let t: LoggedApp;
  before(async () => {
    t = await startLoggedApp(pgDialect as never, {}, { statementTimeoutMs: 500 });
  });
  after(async () => t?.close());

  it('answers 503 unavailable when a query outlasts statement_timeout (a table lock held elsewhere)', async () => {
    const user = await t.createUser();
    const first = await post(t, user.token, 'timeout test');
    assert.equal(first.statusCode, 201);
    const locker = new pg.Client({ connectionString: t.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE posts IN ACCESS EXCLUSIVE MODE');
    try {
      const started = Date.now();
      const read = await t.inject({
        method: 'GET',
        url: `/posts/${body(first).data.uuid}`,
        token: user.token,
      });
      assert.equal(read.statusCode, 503, read.body);
      assert.equal(codeOf(read), 'unavailable');
      assert.ok(Date.now() - started < 5000);
      const write = await post(t, user.token, 'blocked write');
      assert.equal(write.statusCode, 503, write.body);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    const read = await t.inject({ method: 'GET', url: `/posts/${body(first).data.uuid}`, token: user.token });
    assert.equal(read.statusCode, 200);
  });
});
