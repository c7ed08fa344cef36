import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// docs/reliability.md, "Deadlocks": PostgreSQL aborts one of two deadlocked transactions (or, grouped, a lock
// timeout ends the wait first); the API runs it again.
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`a transaction PostgreSQL aborts for a deadlock runs again [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      bob = await t.createUser();
    });
    after(async () => t?.close());

    it('two writers locking two users in opposite orders both commit', async () => {
      const runs = { first: 0, second: 0 };
      let locked = 0;
      let bothLocked: () => void = () => {};
      const barrier = new Promise<void>((resolve) => {
        bothLocked = resolve;
      });
      const writer = (name: 'first' | 'second', a: string, b: string, bio: string) =>
        t.ctx.db.transaction().execute(async (trx) => {
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
      // Grouped (pg-group-commit.ts), each waits at most its lock timeout and may give up too: then both run again.
      assert.ok(runs.first + runs.second >= 3, 'at least one of them ran twice');
      const bios = await t.ctx.db
        .selectFrom('users')
        .select('bio')
        .where('uuid', 'in', [alice.uuid, bob.uuid])
        .execute();
      const [one, other] = bios.map((r) => r.bio);
      assert.equal(one, other, 'both rows hold the write of the one that committed last');
      if (runs.first + runs.second === 3) {
        assert.equal(
          one,
          runs.first === 2 ? 'by first' : 'by second',
          'the run that was retried committed last',
        );
      }
    });
  });
}
