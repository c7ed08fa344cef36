import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  body,
  startTestApp,
  type TestApp,
  type TestDialect,
  type TestUser,
  testDialects,
} from '../helper.ts';

// Names whose order differs between byte (code-point) order and a linguistic collation such as en-US: capitals
// before small letters, '_' between them, accented letters last.
const NAMES = ['apple', 'Banana', 'cherry', 'Éclair', 'zebra', 'Zulu', 'a_b', 'ab', 'Apricot'];
const CODE_POINT_ORDER = [...NAMES].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** A PostgreSQL database whose default collation is not C (ICU en-US, or libc en_US.utf8), if this server has one. */
async function nonCDialect(
  adminUrl: string,
): Promise<{ dialect: TestDialect; collation: string } | undefined> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const icu = await admin.query(
      `select 1 from pg_collation where collprovider = 'i' and collname = 'en-US-x-icu' limit 1`,
    );
    const libc = await admin.query(`select 1 from pg_collation where collname = 'en_US.utf8' limit 1`);
    let options: string | undefined;
    let collation = '';
    if (icu.rowCount) {
      options = `LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`;
      collation = 'ICU en-US';
    } else if (libc.rowCount) {
      options = `LC_COLLATE 'en_US.utf8' LC_CTYPE 'en_US.utf8'`;
      collation = 'libc en_US.utf8';
    }
    if (!options) return undefined;
    const opts = options;
    return {
      collation,
      dialect: {
        name: 'postgres',
        async create() {
          const name = `t_coll_${process.pid}_${randomBytes(4).toString('hex')}`;
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          await c.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' ${opts}`);
          await c.end();
          const url = new URL(adminUrl);
          url.pathname = `/${name}`;
          return {
            url: url.toString(),
            drop: async () => {
              const d = new pg.Client({ connectionString: adminUrl });
              await d.connect();
              await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
              await d.end();
            },
          };
        },
      },
    };
  } finally {
    await admin.end();
  }
}

async function seed(t: TestApp, user: TestUser): Promise<void> {
  const res = await t.inject({
    method: 'POST',
    url: '/posts',
    token: user.token,
    payload: { body: NAMES.map((n) => `#${n}`).join(' ') },
  });
  assert.equal(res.statusCode, 201, res.body);
}

async function names(t: TestApp, query: string): Promise<string[]> {
  const res = await t.inject({
    method: 'GET',
    url: `/tags?filterby[tag_type]=hashtag&limit=100&${query}`,
    token: t.guest,
  });
  assert.equal(res.statusCode, 200, res.body);
  return (body(res).data as { name: string }[]).map((x) => x.name);
}

const QUERIES = [
  'sortby[name]=asc',
  'sortby[name]=desc',
  'filterby[name][gt]=B&sortby[name]=asc',
  'filterby[name][lt]=a&sortby[name]=asc',
];

const adminUrl = process.env.TEST_PG_URL;

describe('text order is the same on SQLite and on a PostgreSQL database with a non-C collation', () => {
  let sqlite: TestApp;
  let postgres: TestApp | undefined;
  let sqliteUser: TestUser;
  let skip: string | undefined;

  before(async () => {
    sqlite = await startTestApp(testDialects()[0] as TestDialect);
    sqliteUser = await sqlite.createUser();
    await seed(sqlite, sqliteUser);
    if (!adminUrl) {
      skip = 'TEST_PG_URL is not set';
      return;
    }
    const found = await nonCDialect(adminUrl);
    if (!found) {
      skip =
        'this PostgreSQL server has no en-US collation (ICU or libc); the non-C case could not be tested here';
      console.warn(`# ${skip}`);
      return;
    }
    postgres = await startTestApp(found.dialect);
    // Prove the database really collates linguistically: 'a' < 'B' is false in byte order.
    const probe = new pg.Client({ connectionString: postgres.url });
    await probe.connect();
    const { rows } = await probe.query(`select 'a' < 'B' as linguistic`);
    await probe.end();
    assert.equal(rows[0].linguistic, true, `the ${found.collation} database sorts 'a' before 'B'`);
    await seed(postgres, await postgres.createUser());
  });
  after(async () => {
    await sqlite?.close();
    await postgres?.close();
  });

  it('SQLite sorts tag names in code-point order', async () => {
    assert.deepEqual(await names(sqlite, 'sortby[name]=asc'), CODE_POINT_ORDER);
  });

  it('sortby[name] and name comparisons give the same answers on both engines', async (t) => {
    if (!postgres) return t.skip(skip);
    for (const q of QUERIES) {
      assert.deepEqual(await names(postgres, q), await names(sqlite, q), q);
    }
    assert.deepEqual(await names(postgres, 'sortby[name]=asc'), CODE_POINT_ORDER);
  });
});
