// PostgreSQL computes searches and list pages a few at a time per process (PG_READ_SLOTS, src/db/read-gate.ts): the
// rest wait their turn and are answered as they would be without the gate. SQLite has no gate (its reader threads
// bound that work).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { registerDirectVersionReader } from '../../src/db/exact-cache.ts';
import { ReadAbandonedError, ReadGate } from '../../src/db/read-gate.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

describe('ReadGate', () => {
  it('runs at most its slots at once, in arrival order, and frees a slot when a read fails', async () => {
    const gate = new ReadGate(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const read = (i: number) => async () => {
      started.push(i);
      running++;
      most = Math.max(most, running);
      await nextTurn();
      await nextTurn();
      running--;
      if (i % 3 === 0) throw new Error(`read ${i} failed`);
      return i;
    };
    const settled = await Promise.allSettled(Array.from({ length: 9 }, (_, i) => gate.run(read(i))));
    assert.equal(most, 2);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(
      settled.map((s) => (s.status === 'fulfilled' ? s.value : 'failed')),
      ['failed', 1, 2, 'failed', 4, 5, 'failed', 7, 8],
    );
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
    assert.equal(await gate.run(async () => 'after the failures'), 'after the failures');
  });

  it('does not run a waiting read whose caller has gone, and passes its slot on', async () => {
    const gate = new ReadGate(1);
    let release = () => {};
    const held = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    let gone = false;
    let ran = false;
    const left = gate.run(
      async () => {
        ran = true;
      },
      () => gone,
    );
    const next = gate.run(async () => 'next');
    gone = true;
    release();
    await held;
    await assert.rejects(left, ReadAbandonedError);
    assert.equal(ran, false);
    assert.equal(await next, 'next');
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
  });
});

for (const dialect of testDialects()) {
  describe(`searches and list pages through the read gate [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    before(async () => {
      t = await startTestApp(dialect, { PG_READ_SLOTS: 1 });
      alice = await t.createUser();
      for (const word of ['quince', 'quince', 'medlar']) {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: alice.token,
          payload: { body: `${word} season #orchard` },
        });
        assert.equal(res.statusCode, 201, res.body);
      }
    });
    after(async () => t?.close());

    it('exists on PostgreSQL only', () => {
      assert.equal(t.ctx.readGate !== undefined, dialect.name === 'postgres');
    });

    it('answers concurrent uncached searches and list pages as it answers them one by one', async () => {
      const urls = [
        '/search?query=quince',
        '/search?query=medlar',
        '/search/types?query=quince',
        '/tags?filterby[tag_type]=hashtag&sortby[name]=asc',
        '/tag-associations?limit=100',
        '/search?query=nothingmatches',
        '/search?query=quince',
      ];
      const get = (url: string) =>
        t.inject({ method: 'GET', url, token: alice.token, headers: { 'cache-control': 'no-cache' } });
      const alone = [];
      for (const url of urls) alone.push(await get(url));
      // All at once, watching the gate while they run.
      let most = { running: 0, waiting: 0 };
      let done = false;
      const watch = (async () => {
        while (!done) {
          const load = t.ctx.readGate?.load ?? { running: 0, waiting: 0 };
          most = {
            running: Math.max(most.running, load.running),
            waiting: Math.max(most.waiting, load.waiting),
          };
          await nextTurn();
        }
      })();
      const together = await Promise.all(urls.map(get));
      done = true;
      await watch;
      for (const [i, res] of together.entries()) {
        assert.equal(res.statusCode, 200, `${urls[i]}: ${res.body}`);
        assert.deepEqual(body(res).data, body(alone[i] as (typeof together)[number]).data, urls[i]);
      }
      assert.equal(body(together[0] as (typeof together)[number]).data.length, 2);
      assert.equal(body(together[3] as (typeof together)[number]).data.length, 1);
      assert.equal(body(together[4] as (typeof together)[number]).data.length, 3);
      if (dialect.name === 'postgres') {
        assert.equal(most.running, 1, 'one computation at a time with PG_READ_SLOTS=1');
        assert.ok(most.waiting >= 1, 'the others waited their turn');
        assert.deepEqual(t.ctx.readGate?.load, { running: 0, waiting: 0 });
      }
    });

    it('skips the search of a client that closed its connection while waiting, and serves the next', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const gate = t.ctx.readGate as ReadGate;
      // Every read the gate is asked to run, and how it ended.
      const outcomes: string[] = [];
      const run = gate.run.bind(gate);
      gate.run = (read, abandoned) =>
        run(read, abandoned).then(
          (v) => {
            outcomes.push('ran');
            return v;
          },
          (err) => {
            outcomes.push(err instanceof ReadAbandonedError ? 'abandoned' : 'failed');
            throw err;
          },
        );
      const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
      const connections = () =>
        new Promise<number>((resolve) => t.app.server.getConnections((_err, n) => resolve(n)));
      /** Aborts a client's request and waits until the server has seen its connection close. */
      const abortAndWait = async (controller: AbortController) => {
        const open = await connections();
        controller.abort();
        for (let i = 0; i < 500 && (await connections()) >= open; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        assert.ok((await connections()) < open, 'the server saw the aborted connection close');
      };
      try {
        // The only slot, held until the client below has gone.
        let release = () => {};
        const held = run(() => new Promise<void>((resolve) => (release = resolve)));
        const abort = new AbortController();
        const headers = { authorization: `Bearer ${alice.token}`, 'cache-control': 'no-cache' };
        const gone = fetch(`${address}/search?query=quince`, { headers, signal: abort.signal }).catch(
          (err: Error) => err.name,
        );
        while (gate.load.waiting < 1) await nextTurn();
        await abortAndWait(abort);
        assert.equal(await gone, 'AbortError');
        const served = fetch(`${address}/search?query=medlar`, { headers });
        while (gate.load.waiting < 2) await nextTurn();
        release();
        await held;
        const res = await served;
        assert.equal(res.status, 200);
        assert.equal(((await res.json()) as { data: unknown[] }).data.length, 1);
        assert.deepEqual(outcomes, ['abandoned', 'ran']);

        // Identical requests share one computation (the exact cache): the first client leaving must not fail the
        // others that joined it. They share it only under one data version, and PostgreSQL's is the cluster-wide
        // snapshot, which any commit of a test file running alongside moves: held still here, as it is when nothing
        // is committed between two requests. (This is the app's last test: the handle is closed after it.)
        registerDirectVersionReader(t.ctx.db, () => ({ data: 'held', auth: 'held' }));
        outcomes.length = 0;
        const heldAgain = run(() => new Promise<void>((resolve) => (release = resolve)));
        const url = '/search?query=quince&limit=7';
        const leaving = new AbortController();
        const first = fetch(`${address}${url}`, {
          headers: { authorization: `Bearer ${alice.token}` },
          signal: leaving.signal,
        }).catch((err: Error) => err.name);
        while (gate.load.waiting < 1) await nextTurn();
        const joined = t.inject({ method: 'GET', url, token: alice.token });
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(gate.load.waiting, 1, 'the second request joined the first one computation');
        await abortAndWait(leaving);
        assert.equal(await first, 'AbortError');
        release();
        await heldAgain;
        const res2 = await joined;
        assert.equal(res2.statusCode, 200, res2.body);
        assert.equal(body(res2).data.length, 2);
        assert.deepEqual(outcomes, ['ran']);
      } finally {
        gate.run = run;
      }
    });
  });
}
