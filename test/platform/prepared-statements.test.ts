import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { MAX_PREPARED, preparedNameOf, SHORT_STATEMENT } from '../../src/db/prepared-statements.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// docs/decisions.md, "Prepared statements on PostgreSQL".
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`statements PostgreSQL keeps prepared [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;

    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
    });
    after(async () => t?.close());

    const prepared = async (db: typeof t.ctx.db) =>
      (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map(
        (r) => r.statement,
      );

    it('names a transaction statement and a short one, not a long one outside a transaction', async () => {
      const long = `select uuid from users where uuid = $1 and username <> ${"'x'".padEnd(SHORT_STATEMENT, ' ')}`;
      const seen = await t.ctx.db.connection().execute(async (conn) => {
        await sql`select username from users where uuid = ${alice.uuid}`.execute(conn);
        await sql.raw(long.replace('$1', `'${alice.uuid}'`)).execute(conn);
        await sql`select uuid from users where uuid = ${alice.uuid} and ${sql.raw(`'${'y'.repeat(SHORT_STATEMENT)}'`)} <> ${'z'}`.execute(
          conn,
        );
        const outside = await prepared(conn);
        const inside = await conn.transaction().execute(async (trx) => {
          await sql`select bio from users where uuid = ${alice.uuid} and ${sql.raw(`'${'w'.repeat(SHORT_STATEMENT)}'`)} <> ${'z'}`.execute(
            trx,
          );
          return prepared(trx);
        });
        return { outside, inside };
      });
      assert.ok(seen.outside.some((s) => s.startsWith('select username from users where uuid = $1')));
      assert.ok(
        !seen.outside.some((s) => s.includes('y'.repeat(SHORT_STATEMENT))),
        'a long read is planned per call',
      );
      assert.ok(
        seen.inside.some((s) => s.includes('w'.repeat(SHORT_STATEMENT))),
        'a transaction statement is named',
      );
    });

    it('writes and reads through the API keep working once their statements are prepared', async () => {
      // More than five runs of each statement: PostgreSQL switches to a generic plan after the fifth.
      const uuids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: alice.token,
          payload: { body: `prepared #tagged${i % 2} run ${i}` },
        });
        assert.equal(res.statusCode, 201, res.body);
        uuids.push(body(res).data.uuid);
      }
      for (const uuid of uuids) {
        const res = await t.inject({ method: 'GET', url: `/posts/${uuid}`, token: alice.token });
        assert.equal(res.statusCode, 200);
        assert.equal(body(res).data.uuid, uuid);
      }
      const tag = await t.inject({
        method: 'GET',
        url: '/tags?filterby[name]=tagged1&filterby[tag_type]=hashtag',
        token: alice.token,
      });
      assert.equal(body(tag).data[0].associations_count, 4);
    });
  });
}

describe('prepared statement names', () => {
  it('stops naming new statements at the cap and keeps the names it gave', () => {
    const first = preparedNameOf('select 1 where $1::int = 1');
    for (let i = 0; i < MAX_PREPARED; i++) preparedNameOf(`select ${i} where $1::int = 1`);
    assert.equal(preparedNameOf('select 1 where $1::int = 1'), first);
    assert.equal(preparedNameOf('select 2 where $1::int = 2'), undefined);
  });
});
