import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import type { Database } from '../../src/db/database.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// docs/reliability.md, "Deadlocks": PostgreSQL aborts one of two deadlocked transactions; the API runs it again.
// Grouped (section 12), a lock timeout ends the wait first, and each writer that gave up runs again alone.
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`a transaction PostgreSQL aborts for a deadlock runs again [${dialect.name}]`, () => {
    let t: TestApp;
    let ungrouped: DbHandle;
    let alice: TestUser;
    let bob: TestUser;

    before(async () => {
      t = await startTestApp(dialect);
      // The same database without group commit: only PostgreSQL's deadlock check ends the wait there.
      ungrouped = connectDatabase(t.url, { poolSize: 3 });
      alice = await t.createUser();
      bob = await t.createUser();
    });
    after(async () => {
      await ungrouped?.db.destroy();
      await t?.close();
    });

    /** Two writers lock alice and bob in opposite orders, each waiting for the other's first lock once. */
    async function opposite(db: Kysely<Database>) {
      const runs = { first: 0, second: 0 };
      let locked = 0;
      let bothLocked: () => void = () => {};
      const barrier = new Promise<void>((resolve) => {
        bothLocked = resolve;
      });
      const writer = (name: 'first' | 'second', a: string, b: string, bio: string) =>
        db.transaction().execute(async (trx) => {
          runs[name]++;
          await sql`select 1 from users where uuid = ${a} for no key update`.execute(trx);
          if (runs[name] === 1) {
            // Only the first run waits for the other's first lock: the deadlock happens once.
            if (++locked === 2) bothLocked();
            await barrier;
          }
          await sql`select 1 from users where uuid = ${b} for no key update`.execute(trx);
          await trx.updateTable('users').set({ bio }).where('uuid', 'in', [a, b]).execute();
        });
      const results = await Promise.allSettled([
        writer('first', alice.uuid, bob.uuid, 'by first'),
        writer('second', bob.uuid, alice.uuid, 'by second'),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'fulfilled'],
      );
      const bios = await db
        .selectFrom('users')
        .select('bio')
        .where('uuid', 'in', [alice.uuid, bob.uuid])
        .execute();
      const [one, other] = bios.map((r) => r.bio);
      assert.equal(one, other, 'both rows hold the write of the one that committed last');
      return { runs, last: one };
    }

    it('two writers locking two users in opposite orders both commit', async () => {
      const { runs, last } = await opposite(ungrouped.db);
      assert.equal(runs.first + runs.second, 3, 'exactly one of them ran twice');
      assert.equal(
        last,
        runs.first === 2 ? 'by first' : 'by second',
        'the run that was retried committed last',
      );
    });

    it('grouped, both commit too, a writer that gave up running again', async () => {
      const { runs, last } = await opposite(t.ctx.db);
      assert.ok(runs.first + runs.second >= 3, 'at least one of them ran twice');
      if (runs.first + runs.second === 3) {
        assert.equal(
          last,
          runs.first === 2 ? 'by first' : 'by second',
          'the run that was retried committed last',
        );
      }
    });
  });
}
