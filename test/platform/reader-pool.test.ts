import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { Kysely, sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { ReaderPool, ReaderPoolDialect } from '../../src/db/reader-pool.ts';
import { installErrorHandler } from '../../src/http/error-handler.ts';
import { body, startTestApp, type TestApp, testDialects, watchEventLoopStalls } from '../helper.ts';
import { hugeReadApp, TEST_READER_HEAP_MB } from './huge-read.ts';

// A SELECT that takes a few hundred milliseconds of pure CPU in SQLite.
const SLOW_SELECT = sql<{ n: number }>`
  with recursive c(x) as (select 1 union all select x + 1 from c where x < 5000000)
  select count(*) as n from c where x % 7 = 3`;

for (const dialect of testDialects()) {
  describe(`reader pool [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t?.close());

    it('uses worker readers for a SQLite file and the same instance on PostgreSQL', () => {
      if (dialect.name === 'sqlite') assert.notEqual(t.ctx.readDb, t.ctx.db);
      else assert.equal(t.ctx.readDb, t.ctx.db);
    });

    it('gives the same rows through readDb as through db, including a row committed just before', async () => {
      const user = await t.createUser();
      const query = (db: Kysely<Database>) =>
        db.selectFrom('users').select(['uuid', 'username', 'karma', 'created_at']).orderBy('uuid').execute();
      const viaPool = await query(t.ctx.readDb);
      assert.deepEqual(viaPool, await query(t.ctx.db));
      assert.ok(viaPool.some((u) => u.uuid === user.uuid));
      if (dialect.name !== 'sqlite') return;
      // Bound values follow the main driver's rules: booleans as 1/0, dates as ISO text, undefined as NULL.
      const bound = await sql<{
        b: number;
        d: string;
        u: null;
      }>`select ${true} as b, ${new Date(0)} as d, ${undefined} as u`.execute(t.ctx.readDb);
      assert.deepEqual({ ...bound.rows[0] }, { b: 1, d: '1970-01-01T00:00:00.000Z', u: null });
    });

    it('gives rows of every value type, and a repeated column name, as the main connection does', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // The readers post rows as arrays of values with the column names once (reader-worker.ts); the pool builds
      // the objects the main connection would have returned.
      const query = sql<Record<string, unknown>>`
        select 1 as a, 'first' as dup, 2.5 as f, null as n, x'00ff' as b, 'second' as dup, 'é✓' as t
        union all select 2, 'x', -1e300, null, x'', 'y', ''`;
      const viaPool = (await query.execute(t.ctx.readDb)).rows;
      const direct = (await query.execute(t.ctx.db)).rows;
      assert.deepEqual(viaPool, direct);
      assert.deepEqual(Object.keys(viaPool[0] as object), ['a', 'dup', 'f', 'n', 'b', 't']);
      assert.deepEqual(viaPool[0], {
        a: 1,
        dup: 'second',
        f: 2.5,
        n: null,
        b: new Uint8Array([0, 255]),
        t: 'é✓',
      });
      assert.equal((await sql`select 1 as a where 0`.execute(t.ctx.readDb)).rows.length, 0);
      // A column name is never taken for the object's prototype.
      const odd = sql<Record<string, unknown>>`select 'text' as "__proto__", 2 as b`;
      const [oddPool] = (await odd.execute(t.ctx.readDb)).rows;
      assert.deepEqual(oddPool, (await odd.execute(t.ctx.db)).rows[0]);
      assert.equal(Object.getPrototypeOf(oddPool), Object.prototype);
      assert.deepEqual(Object.getOwnPropertyDescriptor(oddPool, '__proto__')?.value, 'text');
    });

    it('lists a message right after it was sent (read-your-writes through HTTP)', async () => {
      const alice = await t.createUser();
      const bob = await t.createUser();
      const sent = await t.inject({
        method: 'POST',
        url: '/messages',
        token: alice.token,
        payload: { recipient_uuid: bob.uuid, body: 'hello through the pool' },
      });
      assert.ok(sent.statusCode < 300, sent.body);
      const uuid = body(sent).data.uuid;
      for (const who of [alice, bob]) {
        const list = await t.inject({ method: 'GET', url: '/messages', token: who.token });
        assert.equal(list.statusCode, 200);
        assert.ok(body(list).data.some((m: { uuid: string }) => m.uuid === uuid));
      }
    });

    it("gives each reader's connection the configured page cache", {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // SQLite reports a cache set in KiB as a negative number.
      const cacheSize = async (db: Kysely<Database>) =>
        (await sql<{ cache_size: number }>`select cache_size from pragma_cache_size`.execute(db)).rows[0]
          ?.cache_size;
      assert.equal(await cacheSize(t.ctx.readDb), -t.ctx.config.SQLITE_READER_CACHE_MB * 1024);
      const pool = new ReaderPool({ path: t.url.slice('sqlite:'.length), size: 1, cacheMb: 3 });
      const db = new Kysely<Database>({ dialect: new ReaderPoolDialect(pool) });
      try {
        assert.equal(await cacheSize(db), -3 * 1024);
      } finally {
        await db.destroy();
      }
    });

    it('refuses anything but a SELECT on the pool', { skip: dialect.name !== 'sqlite' }, async () => {
      await assert.rejects(sql`delete from users`.execute(t.ctx.readDb), /only SELECT/);
      await assert.rejects(
        t.ctx.readDb.transaction().execute(async () => 1),
        /no transactions/,
      );
      const left = await t.ctx.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.ok(Number(left.n) > 0);
    });

    it('returns a worker error as a SQLite error and keeps serving', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      await assert.rejects(sql`select * from no_such_table`.execute(t.ctx.readDb), (err: unknown) => {
        const e = err as { code?: string; errcode?: number; message?: string };
        assert.equal(e.code, 'ERR_SQLITE_ERROR');
        assert.equal(e.errcode, 1);
        assert.match(String(e.message), /no such table/);
        return true;
      });
      const res = await t.inject({ method: 'GET', url: '/tags', token: t.guest });
      assert.equal(res.statusCode, 200);
    });

    it('answers 503, not a crash, when a reader cannot open the database', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // A reader on a file that does not exist dies at start (SQLITE_CANTOPEN); the pool is the production class.
      const path = t.url.slice('sqlite:'.length).replace(/test\.db$/, 'missing.db');
      const readDb = new Kysely<Database>({
        dialect: new ReaderPoolDialect(new ReaderPool({ path, size: 1 })),
      });
      const app = Fastify({ logger: false });
      installErrorHandler(app);
      app.get('/probe', async () => (await sql`select 1 as n`.execute(readDb)).rows);
      try {
        for (let i = 0; i < 2; i++) {
          const res = await app.inject({ method: 'GET', url: '/probe' });
          assert.equal(res.statusCode, 503, res.body);
          assert.equal(body(res).error.code, 'unavailable');
        }
      } finally {
        await app.close();
        await readDb.destroy();
      }
    });

    it('answers 503 to a read queued or started once the pool is closing', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // A process shutting down closes its pool after its open connections; a request whose client left may still
      // be reading. One reader: the slow read is handed to it at once, the second waits in the queue; after the close
      // a read is refused before it is queued.
      const pool = new ReaderPool({ path: t.url.slice('sqlite:'.length), size: 1 });
      const readDb = new Kysely<Database>({ dialect: new ReaderPoolDialect(pool) });
      const app = Fastify({ logger: false });
      installErrorHandler(app);
      app.get('/pool', async () => pool.query('select 1 as n', []));
      app.get('/kysely', async () => (await sql`select 1 as n`.execute(readDb)).rows);
      try {
        // Kysely closes a driver only once it has used it.
        await sql`select 1 as n`.execute(readDb);
        const running = pool.query(SLOW_SELECT.compile(readDb).sql, []).catch((err: unknown) => err);
        const queued = pool.query('select 1 as n', []).catch((err: unknown) => err);
        await readDb.destroy();
        assert.equal(((await queued) as { errcode?: number }).errcode, 14, 'the queued read');
        // A thread stops between rows, not inside SQLite's step: a read that finishes first keeps its rows.
        const ran = await running;
        if (!Array.isArray(ran)) assert.equal((ran as { errcode?: number }).errcode, 14, String(ran));
        // Through HTTP: the pool's own refusal, and Kysely's once its driver is destroyed.
        for (const url of ['/pool', '/kysely']) {
          const res = await app.inject({ method: 'GET', url });
          assert.equal(res.statusCode, 503, `${url}: ${res.body}`);
          assert.equal(body(res).error.code, 'unavailable');
        }
      } finally {
        await app.close();
        await pool.close();
      }
    });

    it('runs reads side by side: a quick read does not wait behind a slow one', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // Kysely serializes every query of a dialect whose adapter says "one connection" (SQLite's does): the pool's
      // adapter must not, or its readers take turns on one thread.
      const finished: string[] = [];
      const slow = SLOW_SELECT.execute(t.ctx.readDb).then(() => finished.push('slow'));
      await sleep(20);
      const quick = sql<{ n: number }>`select 1 as n`
        .execute(t.ctx.readDb)
        .then(() => finished.push('quick'));
      await Promise.all([slow, quick]);
      assert.deepEqual(finished, ['quick', 'slow']);
    });

    it("answers 503 when a read outgrows its thread's heap, and keeps serving", {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // A million rows of 200 characters each: hundreds of MB as JavaScript objects.
      const app = hugeReadApp(t.url.slice('sqlite:'.length), TEST_READER_HEAP_MB, 1_000_000);
      try {
        const huge = await app.inject({ method: 'GET', url: '/huge' });
        assert.equal(huge.statusCode, 503, huge.body);
        assert.equal(body(huge).error.code, 'unavailable');
        const small = await app.inject({ method: 'GET', url: '/small' });
        assert.equal(small.statusCode, 200, small.body);
        assert.deepEqual(JSON.parse(small.body), [{ n: 1 }]);
      } finally {
        await app.close();
      }
    });

    it("keeps a reader's heap limit when the process runs with the API's own heap flags", {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      // src/server.ts starts the API with --max-old-space-size and --max-semi-space-size; V8 applies those to every
      // isolate, so without releasing them a reader would take 400,000 rows (over 100 MB) into a 512 MB heap.
      const out = execFileSync(
        process.execPath,
        [
          '--max-old-space-size=512',
          '--max-semi-space-size=32',
          'test/platform/huge-read.ts',
          t.url.slice('sqlite:'.length),
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
      const { errors, ...result } = JSON.parse(out.trim().split('\n').at(-1) as string);
      assert.deepEqual(result, { huge: 503, small: 200, smallBody: '[{"n":1}]' }, errors.join('\n'));
    });

    it('keeps the event loop free while a slow read runs on the pool', {
      skip: dialect.name !== 'sqlite',
    }, async () => {
      const stalls = watchEventLoopStalls();
      const started = performance.now();
      const [slow] = await Promise.all([SLOW_SELECT.execute(t.ctx.readDb), sleep(20)]);
      const took = performance.now() - started;
      const maxDrift = stalls.stop();
      assert.ok(Number(slow.rows[0]?.n) > 0);
      assert.ok(took > 300, `the slow SELECT took only ${took.toFixed(0)} ms; make it slower`);
      // On the main thread the read would hold the loop for all of its time; a loaded machine (CI runs two test
      // files per core) delays timers by tens of ms anyway, so the bound is relative to the read.
      assert.ok(
        maxDrift < took / 2,
        `event loop stalled ${maxDrift.toFixed(0)} ms during a ${took.toFixed(0)} ms read`,
      );
    });
  });
}
