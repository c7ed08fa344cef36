import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { apiConnectOptions } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { closeDatabase, connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import { testDialects } from '../helper.ts';

// docs/decisions.md, fifty-sixth session: a new backend's first statements are slow, so the API keeps its connections.
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`idle PostgreSQL connections [${dialect.name}]`, () => {
    let drop: () => Promise<void>;
    let api: DbHandle;
    let plain: DbHandle;

    before(async () => {
      const created = await dialect.create();
      drop = created.drop;
      const config = loadConfig({}, { DATABASE_URL: created.url, LOG_LEVEL: 'silent' });
      api = connectDatabase(created.url, { ...apiConnectOptions(config), poolSize: 2 });
      plain = connectDatabase(created.url, { poolSize: 1 });
    });
    after(async () => {
      try {
        if (api) await closeDatabase(api);
        if (plain) await closeDatabase(plain);
      } finally {
        await drop?.();
      }
    });

    const backend = async (handle: DbHandle) =>
      (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db)).rows[0]?.pid;

    it("keeps the API's connection through a pause that closes a default pool's", async () => {
      const first = { api: await backend(api), plain: await backend(plain) };
      // Past node-postgres's default idle timeout of 10 s.
      await sleep(10_500);
      const later = { api: await backend(api), plain: await backend(plain) };
      assert.equal(later.api, first.api, 'the API reads through the backend it already had');
      assert.notEqual(later.plain, first.plain, 'the default pool opened another backend');
    });
  });
}
