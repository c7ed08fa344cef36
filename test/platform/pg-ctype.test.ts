import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

// Under libc's C or POSIX character classes PostgreSQL's lower() and [:alnum:] know ASCII letters only: the search
// index would drop every other letter while queries keep them (found by a review). Such a database is refused before
// anything is migrated.
const adminUrl = process.env.TEST_PG_URL;

describe('a PostgreSQL database with C character classes [postgres]', {
  skip: !adminUrl && 'needs TEST_PG_URL',
}, () => {
  const name = `t_ctype_${process.pid}_${randomBytes(4).toString('hex')}`;
  let handle: DbHandle;

  before(async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'`);
    await admin.end();
    const url = new URL(adminUrl as string);
    url.pathname = `/${name}`;
    handle = connectDatabase(url.toString());
  });
  after(async () => {
    await handle?.db.destroy();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.end();
  });

  it('is refused by the migration, naming DATABASE_URL and the fix, with nothing migrated', async () => {
    await assert.rejects(migrateToLatest(handle.db, 'postgres'), (err: Error) => {
      assert.match(err.message, /^DATABASE_URL: the database's character classes are C\b/);
      assert.match(err.message, /LOCALE 'C\.UTF-8'/);
      return true;
    });
    const tables = await sql<{ n: string }>`
      select count(*) as n from information_schema.tables where table_schema = 'public'`.execute(handle.db);
    assert.equal(Number(tables.rows[0]?.n), 0);
  });

  it('lets a database through that was migrated before the rule (it was serving)', async () => {
    await sql`create table kysely_migration (name varchar(255) primary key, timestamp varchar(255) not null)`.execute(
      handle.db,
    );
    const ran = await migrateToLatest(handle.db, 'postgres');
    assert.ok(ran.includes('0001-core'), ran.join(', '));
  });
});
