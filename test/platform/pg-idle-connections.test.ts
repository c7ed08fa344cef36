import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { apiConnectOptions } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import { testDialects } from '../helper.ts';

// docs/decisions.md, fifty-sixth session: a new backend's first statements are slow, so the API keeps its connections.
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`idle PostgreSQL connections [${dialect.name}]`, () => {
    let drop: () => Promise<void>;
    let api: DbHandle;
    let brief: DbHandle;

    before(async () => {
      const created = await dialect.create();
      drop = created.drop;
      const config = loadConfig({}, { DATABASE_URL: created.url, LOG_LEVEL: 'silent' });
      api = connectDatabase(created.url, { ...apiConnectOptions(config), poolSize: 2 });
      brief = connectDatabase(created.url, { poolSize: 1, idleTimeoutMs: 100 });
    });
    after(async () => {
      await api?.db.destroy();
      await brief?.db.destroy();
      await drop?.();
    });

    const backend = async (handle: DbHandle) =>
      (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db)).rows[0]?.pid;

    it("keeps the API's connection through a pause, where a pool with an idle timeout opens a new one", async () => {
      assert.equal(apiConnectOptions(loadConfig({}, {})).idleTimeoutMs, 0);
      const before = { api: await backend(api), brief: await backend(brief) };
      await sleep(400);
      const later = { api: await backend(api), brief: await backend(brief) };
      assert.equal(later.api, before.api, 'the API reads through the backend it already had');
      assert.notEqual(later.brief, before.brief, 'an idle timeout of 100 ms closed the first backend');
    });
  });
}
