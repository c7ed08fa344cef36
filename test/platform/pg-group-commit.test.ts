// Group commit on PostgreSQL (docs/reliability.md, "Group commit on PostgreSQL"): transactions that queue for a
// lane share its server transaction, each in a savepoint, and one COMMIT. These tests pin the contract on a scratch
// table: nobody is answered before the COMMIT, a failing member takes only itself down, a lost connection fails
// every member of its group and nothing else. The HTTP side is in group-commit.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import { DEFERRED } from '../../src/db/prepared-statements.ts';
import { countPgRoundTrips, type PgRoundTrips, testDialects } from '../helper.ts';

interface Scratch {
  item: { id: number; label: string };
}

interface Counters {
  counter: { id: string; n: number };
}

for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  // A lane left held would hang the suite: fail it instead.
  describe('group commit in the PostgreSQL driver', { timeout: 60_000 }, () => {
    let drop: () => Promise<void>;
    let handle: DbHandle;
    let db: Kysely<Scratch>;
    let other: pg.Client;
    const stats = () => ({ ...(handle.pgGroupCommitStats?.() ?? assert.fail('no group commit stats')) });
    /** Labels of the committed rows, read on a connection of its own. */
    const stored = async (prefix: string) =>
      (await other.query('select label from item where label like $1 order by id', [`${prefix}%`])).rows.map(
        (r) => r.label as string,
      );
    let nextId = 0;
    const insert = (trx: Kysely<Scratch>, label: string) =>
      trx.insertInto('item').values({ id: ++nextId, label }).execute();
    /** An insert whose outcome nobody reads: it may wait for the member's next statement (DEFERRED). */
    const insertDeferred = (trx: Kysely<Scratch>, label: string, id = ++nextId) =>
      trx.insertInto('item').values({ id, label }).modifyEnd(DEFERRED).execute();
    // Round trips of the pool's clients, counted from before they connect.
    let trips: PgRoundTrips;

    before(async () => {
      trips = countPgRoundTrips();
      const created = await dialect.create();
      drop = created.drop;
      // One lane, so queued transactions join one group deterministically; a long cap, so only an empty queue commits.
      handle = connectDatabase(created.url, {
        poolSize: 4,
        pgGroupCommit: { lanes: 1, maxMembers: 32, maxDelayMs: 60_000 },
      });
      db = handle.db as unknown as Kysely<Scratch>;
      await sql`create table item (id integer primary key, label text not null)`.execute(db);
      // The one way to fail a COMMIT on purpose: a deferred check that refuses one label.
      await sql
        .raw(`create function refuse_at_commit() returns trigger language plpgsql as $$
          begin
            if new.label = 'commit-refused' then raise exception 'refused at commit'; end if;
            return null;
          end $$;
          create constraint trigger refuse_at_commit after insert on item
            deferrable initially deferred for each row execute function refuse_at_commit()`)
        .execute(db);
      other = new pg.Client({ connectionString: created.url });
      await other.connect();
    });
    after(async () => {
      trips?.restore();
      await other?.end();
      await handle?.db.destroy();
      await drop?.();
    });

    it('sends a deferred write with the next statement, in its round trip, and one left last before the COMMIT', async () => {
      trips.reset();
      const seen = await db.transaction().execute(async (trx) => {
        await insertDeferred(trx, 'deferred-read');
        // The read goes behind the insert in the same write: it sees the row.
        return (
          await trx.selectFrom('item').select('label').where('label', '=', 'deferred-read').execute()
        ).map((r) => r.label);
      });
      const oneTrip = trips.count;
      trips.reset();
      await db.transaction().execute((trx) => insertDeferred(trx, 'deferred-last'));
      const lastTrip = trips.count;
      assert.deepEqual(seen, ['deferred-read']);
      // BEGIN and the savepoint go with the first statement sent; the COMMIT is one more.
      assert.equal(oneTrip, 2, 'the insert and the read in one round trip, then the COMMIT');
      assert.equal(lastTrip, 2, 'the insert sent alone at the end of its member, then the COMMIT');
      assert.deepEqual(await stored('deferred-'), ['deferred-read', 'deferred-last']);
    });

    it('fails only the member whose deferred write fails, whether it fails ahead of a statement or at the end', async () => {
      const taken = ++nextId;
      await db.transaction().execute((trx) => insert(trx, 'dup-first'));
      await db
        .transaction()
        .execute((trx) =>
          trx.updateTable('item').set({ id: taken }).where('label', '=', 'dup-first').execute(),
        );
      const before = stats();
      const results = await Promise.allSettled([
        db.transaction().execute((trx) => insertDeferred(trx, 'dup-kept-a')),
        // The duplicate fails the select it went ahead of: the member fails with the insert's error.
        db.transaction().execute(async (trx) => {
          await insertDeferred(trx, 'dup-ahead', taken);
          await trx.selectFrom('item').select('label').execute();
        }),
        // Sent at the member's end: its commit fails with the insert's error.
        db.transaction().execute((trx) => insertDeferred(trx, 'dup-last', taken)),
        // Queued, then given up: never sent, nothing to undo.
        db.transaction().execute(async (trx) => {
          await insertDeferred(trx, 'dup-given-up');
          throw new Error('gave up');
        }),
        db.transaction().execute(async (trx) => {
          await insertDeferred(trx, 'dup-kept-b');
          await insert(trx, 'dup-kept-c');
        }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled'],
      );
      for (const i of [1, 2]) assert.equal((results[i] as PromiseRejectedResult).reason.code, '23505');
      assert.deepEqual(await stored('dup-'), ['dup-first', 'dup-kept-a', 'dup-kept-b', 'dup-kept-c']);
      const after = stats();
      assert.equal(after.failedGroups, before.failedGroups, 'no group was lost for a member');
      assert.equal(after.committedMembers - before.committedMembers, 2);
    });

    it('fails only its member when a deferred value cannot be sent, and drops deferred writes a savepoint undoes', async () => {
      const before = stats();
      const results = await Promise.allSettled([
        db.transaction().execute((trx) => insertDeferred(trx, 'value-kept-a')),
        db.transaction().execute(async (trx) => {
          // node-postgres sends an object as JSON, and JSON has no BigInt: refused where it is deferred.
          await insertDeferred(trx, { big: 1n } as unknown as string);
          await insert(trx, 'value-unsent');
        }),
        db.transaction().execute((trx) => insertDeferred(trx, 'value-kept-b')),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.match(String((results[1] as PromiseRejectedResult).reason), /BigInt/);
      assert.deepEqual(await stored('value-'), ['value-kept-a', 'value-kept-b']);
      assert.equal(stats().failedGroups, before.failedGroups, 'no group was lost for a member');

      const trx = await db.startTransaction().execute();
      await insert(trx, 'savepoint-before');
      const inner = await trx.savepoint('inner').execute();
      // A duplicate key, never sent: the rollback to the savepoint undoes it before it could fail.
      await insertDeferred(inner, 'savepoint-undone', nextId);
      const back = await inner.rollbackToSavepoint('inner').execute();
      await insertDeferred(back, 'savepoint-after');
      await back.commit().execute();
      assert.deepEqual(await stored('savepoint-'), ['savepoint-before', 'savepoint-after']);
    });

    it('runs a deferred write at once outside a transaction', async () => {
      await insertDeferred(db, 'outside-deferred');
      assert.deepEqual(await stored('outside-deferred'), ['outside-deferred']);
    });

    it('runs queued transactions in one COMMIT and answers each only once it is committed', async () => {
      const before = stats();
      const seenAtAnswer = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          db
            .transaction()
            .execute((trx) => insert(trx, `shared-${i}`))
            // Read on another connection when the answer arrives: the row must be committed by then.
            .then(() => stored(`shared-${i}`)),
        ),
      );
      assert.deepEqual(
        seenAtAnswer,
        Array.from({ length: 10 }, (_, i) => [`shared-${i}`]),
      );
      const after = stats();
      assert.equal(after.committedMembers - before.committedMembers, 10);
      assert.equal(after.commits - before.commits, 1, 'the ten queued transactions shared one COMMIT');
    });

    it('undoes a failing member alone, and one that went on after a failed statement', async () => {
      const results = await Promise.allSettled(
        ['kept-a', 'thrown', 'swallowed', 'kept-b'].map((label) =>
          db.transaction().execute(async (trx) => {
            await insert(trx, label);
            if (label === 'thrown') throw new Error('the member gave up');
            if (label === 'swallowed') {
              // A duplicate key aborts the server transaction; going on as if nothing happened must not commit.
              await trx
                .insertInto('item')
                .values({ id: nextId, label: 'duplicate' })
                .execute()
                .catch(() => {});
            }
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
      );
      assert.match(String((results[1] as PromiseRejectedResult).reason), /the member gave up/);
      assert.deepEqual(await stored('kept-'), ['kept-a', 'kept-b']);
      assert.deepEqual(await stored('thrown'), []);
      assert.deepEqual(await stored('swallowed'), []);
      assert.deepEqual(await stored('duplicate'), []);
    });

    it('undoes nothing of another member for one that failed or ended before its first statement', async () => {
      // Queued on the one lane: a member's savepoint goes with its first statement, so one that ran none has no
      // savepoint of its own to roll back to; the one there is its predecessor's, or the group has not begun.
      const run = (steps: ('insert' | 'throw')[], label: string) =>
        db.transaction().execute(async (trx) => {
          for (const step of steps) {
            if (step === 'throw') throw new Error(`${label} gave up`);
            await insert(trx, label);
          }
        });
      const results = await Promise.allSettled([
        run(['throw'], 'empty-first'),
        run(['insert'], 'empty-kept-a'),
        run(['throw'], 'empty-thrown'),
        run([], 'empty-nothing'),
        run(['insert'], 'empty-kept-b'),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      assert.deepEqual(await stored('empty-'), ['empty-kept-a', 'empty-kept-b']);
      // A group none of whose members ran a statement has nothing to commit.
      const before = stats();
      await Promise.all([run([], 'none-a'), run([], 'none-b')]);
      assert.equal(stats().commits, before.commits);
      await run(['insert'], 'empty-after');
      assert.deepEqual(await stored('empty-after'), ['empty-after']);
    });

    it('fails every member of a group whose connection is lost, stores none of them, and goes on', async () => {
      const failedBefore = stats().failedMembers;
      const held = Promise.withResolvers<void>();
      const reached = Promise.withResolvers<void>();
      let pid = 0;
      const first = db.transaction().execute((trx) => insert(trx, 'lost-first'));
      const second = db.transaction().execute(async (trx) => {
        await insert(trx, 'lost-second');
        pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]?.pid ?? 0;
        reached.resolve();
        await held.promise;
        await insert(trx, 'lost-third');
      });
      // The first member has finished and waits in the open group while the second holds the lane.
      await reached.promise;
      await other.query('select pg_terminate_backend($1)', [pid]);
      held.resolve();
      const settled = await Promise.allSettled([first, second]);
      assert.deepEqual(
        settled.map((r) => r.status),
        ['rejected', 'rejected'],
      );
      assert.deepEqual(await stored('lost-'), []);
      await db.transaction().execute((trx) => insert(trx, 'after-loss'));
      assert.deepEqual(await stored('after-loss'), ['after-loss']);
      assert.equal(
        stats().failedMembers - failedBefore,
        1,
        'the waiting member is counted as lost with its group',
      );
    });

    it('fails every member of a group whose COMMIT fails, stores none of them, and goes on', async () => {
      const before = stats();
      const settled = await Promise.allSettled(
        ['commit-innocent', 'commit-refused'].map((label) =>
          db.transaction().execute((trx) => insert(trx, label)),
        ),
      );
      assert.deepEqual(
        settled.map((r) => r.status),
        ['rejected', 'rejected'],
      );
      for (const r of settled) assert.match(String((r as PromiseRejectedResult).reason), /refused at commit/);
      assert.deepEqual(await stored('commit-'), []);
      const after = stats();
      assert.equal(after.failedGroups - before.failedGroups, 1);
      assert.equal(after.failedMembers - before.failedMembers, 2);
      await db.transaction().execute((trx) => insert(trx, 'after-refusal'));
      assert.deepEqual(await stored('after-refusal'), ['after-refusal']);
    });

    it('keeps a transaction begun on a session that already ran statements on that session, alone', async () => {
      const before = stats();
      const pids = await db.connection().execute(async (conn) => {
        const outside = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn)).rows[0]
          ?.pid;
        const inside = await conn.transaction().execute(async (trx) => {
          await insert(trx, 'pinned');
          return (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]?.pid;
        });
        return { outside, inside };
      });
      assert.equal(pids.inside, pids.outside);
      assert.deepEqual(await stored('pinned'), ['pinned']);
      assert.equal(stats().committedMembers, before.committedMembers, 'not a member of any group');
    });
  });

  describe('two commit groups that each hold a row the other wants', { timeout: 60_000 }, () => {
    let drop: () => Promise<void>;
    let handle: DbHandle;
    let db: Kysely<Counters>;
    before(async () => {
      const created = await dialect.create();
      drop = created.drop;
      handle = connectDatabase(created.url, {
        poolSize: 6,
        pgGroupCommit: { lanes: 2, maxMembers: 32, maxDelayMs: 60_000, lockTimeoutMs: 200 },
      });
      db = handle.db as unknown as Kysely<Counters>;
      await sql`create table counter (id text primary key, n integer not null)`.execute(db);
      await db
        .insertInto('counter')
        .values([
          { id: 'x', n: 0 },
          { id: 'y', n: 0 },
        ])
        .execute();
    });
    after(async () => {
      await handle?.db.destroy();
      await drop?.();
    });

    it('breaks the wait with the lock timeout, runs the waiting member again alone, and commits all four', async () => {
      const codes: string[] = [];
      // The lock timeout each run had: 200 ms in a group, none for a run on its own.
      const timeouts: string[] = [];
      const bump = async (trx: Kysely<Counters>, id: string) => {
        const setting = await sql<{ v: string }>`select current_setting('lock_timeout') as v`.execute(trx);
        timeouts.push(setting.rows[0]?.v ?? '');
        try {
          await trx
            .updateTable('counter')
            .set((eb) => ({ n: eb('n', '+', 1) }))
            .where('id', '=', id)
            .execute();
        } catch (err) {
          codes.push(String((err as { code?: unknown }).code));
          throw err;
        }
      };
      const lockedX = Promise.withResolvers<void>();
      const lockedY = Promise.withResolvers<void>();
      const go = Promise.withResolvers<void>();
      // Lanes are taken least busy first: the first two open one group each, the next two queue behind them.
      const runs = [
        db.transaction().execute(async (trx) => {
          await bump(trx, 'x');
          lockedX.resolve();
          await go.promise;
        }),
        db.transaction().execute(async (trx) => {
          await bump(trx, 'y');
          lockedY.resolve();
          await go.promise;
        }),
        db.transaction().execute((trx) => bump(trx, 'y')),
        db.transaction().execute((trx) => bump(trx, 'x')),
      ];
      await Promise.all([lockedX.promise, lockedY.promise]);
      go.resolve();
      const settled = await Promise.allSettled(runs);
      assert.deepEqual(
        settled.map((r) => r.status),
        ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'],
        JSON.stringify(settled),
      );
      assert.ok(codes.includes('55P03'), `a member gave up waiting: ${codes}`);
      assert.ok(!codes.includes('40P01'), `no deadlock was left for the server to find: ${codes}`);
      assert.deepEqual(timeouts.slice(0, 4).sort(), ['200ms', '200ms', '200ms', '200ms'], `${timeouts}`);
      assert.ok(
        timeouts.slice(4).length > 0 && timeouts.slice(4).every((v) => v === '0'),
        `ran again alone: ${timeouts}`,
      );
      const rows = await db.selectFrom('counter').select(['id', 'n']).orderBy('id').execute();
      assert.deepEqual(rows, [
        { id: 'x', n: 2 },
        { id: 'y', n: 2 },
      ]);
    });
  });
}
