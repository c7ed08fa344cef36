// Migrations commit whole or not at all on both engines: a start stopped halfway (an index build over a grown table
// killed by Ctrl-C) must leave a database the next start can migrate, and two processes starting at once must not
// both run the same migration.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import { migrationsFor, runMigrations } from '../../src/db/migrate.ts';
import { testDialects } from '../helper.ts';

/** Names of the tables in the database (either engine). */
async function tableNames(db: Kysely<unknown>, dialect: string): Promise<string[]> {
  const r =
    dialect === 'postgres'
      ? await sql<{
          name: string;
        }>`select tablename as name from pg_tables where schemaname = 'public'`.execute(db)
      : await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db);
  return r.rows.map((row) => row.name);
}

/** Migrations that each create one table; the one of table `failing` throws after creating it. */
function tableMigrations(failing?: string) {
  const create = (name: string) => ({
    async up(db: Kysely<unknown>) {
      await sql`create table ${sql.ref(name)} (id integer primary key)`.execute(db);
      if (name === failing) throw new Error('stopped halfway');
    },
  });
  return { '9001-first': create('m_first'), '9002-second': create('m_second') };
}

for (const dialect of testDialects()) {
  describe(`migrations run in one transaction [${dialect.name}]`, () => {
    let handle: DbHandle;
    let drop: () => Promise<void>;
    let url: string;

    before(async () => {
      ({ url, drop } = await dialect.create());
      handle = connectDatabase(url);
    });
    after(async () => {
      await handle?.db.destroy();
      await drop?.();
    });

    it('a migration that fails halfway leaves nothing of the run, and names itself', async () => {
      const db = handle.db as unknown as Kysely<unknown>;
      await assert.rejects(
        runMigrations(handle.db, handle.dialect, tableMigrations('m_second')),
        (err: Error) => {
          assert.match(
            err.message,
            /^migration 9002-second failed \(nothing of this run was kept\): stopped halfway/,
          );
          return true;
        },
      );
      const tables = await tableNames(db, dialect.name);
      assert.ok(!tables.includes('m_first') && !tables.includes('m_second'), tables.join(', '));
      const recorded = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
      assert.deepEqual(recorded.rows, [], 'the migration before it is not recorded either');
      // The next start runs the whole list.
      assert.deepEqual(await runMigrations(handle.db, handle.dialect, tableMigrations()), [
        '9001-first',
        '9002-second',
      ]);
      const now = await tableNames(db, dialect.name);
      assert.ok(now.includes('m_first') && now.includes('m_second'));
    });

    it('two processes migrating a new database at once: one runs each migration, the other finds none left', {
      skip: dialect.name !== 'sqlite' && 'PostgreSQL: the migrator locks (Kysely)',
    }, async () => {
      const { url: fresh, drop: dropFresh } = await dialect.create();
      const script = `
        import { connectDatabase } from './src/db/connect.ts';
        import { migrateToLatest } from './src/db/migrate.ts';
        const handle = connectDatabase(process.argv[1]);
        const ran = await migrateToLatest(handle.db, handle.dialect);
        await handle.db.destroy();
        console.log(JSON.stringify(ran.length));`;
      const start = () =>
        new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', script, fresh], {
            cwd: new URL('../..', import.meta.url).pathname,
          });
          let out = '';
          let err = '';
          child.stdout.on('data', (d) => {
            out += d;
          });
          child.stderr.on('data', (d) => {
            err += d;
          });
          child.on('close', (code) => resolve({ code, out, err }));
        });
      const results = await Promise.all([start(), start()]);
      for (const r of results) assert.equal(r.code, 0, r.err);
      const counts = results.map((r) => Number(r.out.trim())).sort((a, b) => a - b);
      const all = Object.keys(migrationsFor('sqlite')).length;
      assert.deepEqual(counts, [0, all], 'the second waited, then found every migration done');
      const check = connectDatabase(fresh);
      const recorded = await sql<{ n: number }>`select count(*) as n from kysely_migration`.execute(check.db);
      assert.equal(Number(recorded.rows[0]?.n), all);
      await check.db.destroy();
      await dropFresh();
    });
  });
}
