import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { connectDatabase } from '../../src/db/connect.ts';
import {
  failedAhead,
  MAX_PREPARED,
  prefixedText,
  prefixMark,
  preparedNameOf,
  prepareStatements,
  SHORT_STATEMENT,
} from '../../src/db/prepared-statements.ts';
import { findVisibleTagsForViewersPg } from '../../src/modules/tag/tag.repository.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, findTag } from '../tags/support.ts';

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

    it('names a transaction statement and a short one the second time they run, not a long one outside', async () => {
      const twice = async (run: () => Promise<unknown>) => {
        await run();
        await run();
      };
      const seen = await t.ctx.db.connection().execute(async (conn) => {
        await sql`select display_name from users where uuid = ${alice.uuid}`.execute(conn);
        const once = await prepared(conn);
        await twice(() => sql`select username from users where uuid = ${alice.uuid}`.execute(conn));
        await twice(() =>
          sql`select uuid from users where uuid = ${alice.uuid} and ${sql.raw(`'${'y'.repeat(SHORT_STATEMENT)}'`)} <> ${'z'}`.execute(
            conn,
          ),
        );
        const outside = await prepared(conn);
        const inside = await conn.transaction().execute(async (trx) => {
          await twice(() =>
            sql`select bio from users where uuid = ${alice.uuid} and ${sql.raw(`'${'w'.repeat(SHORT_STATEMENT)}'`)} <> ${'z'}`.execute(
              trx,
            ),
          );
          return prepared(trx);
        });
        return { once, outside, inside };
      });
      assert.ok(
        !seen.once.some((s) => s.startsWith('select display_name')),
        'a statement run once takes no name',
      );
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

    it('names a long lookup marked as prepared, such as a tag read by uuid', async () => {
      await createPost(t, alice, 'marked #preparedlookup');
      const tag = await findTag(t, 'hashtag', 'preparedlookup');
      const handle = connectDatabase(t.url, { poolSize: 1 });
      try {
        // GET /tags/{uuid} reads through the turn's batch on PostgreSQL: that statement is the one to name.
        for (let i = 0; i < 2; i++) {
          const found = await findVisibleTagsForViewersPg(
            handle.db,
            [{ uuid: tag.uuid, viewer: alice.uuid }],
            100,
          );
          assert.equal(found.get(0)?.associations.length, 1);
        }
        const names = await prepared(handle.db);
        assert.ok(
          names.some((s) => s.startsWith('select /* prepared */') && s.includes('join tags t')),
          names.join('\n'),
        );
      } finally {
        await handle.db.destroy();
      }
    });

    it('runs a statement again when a column added under it makes its prepared form stale', async () => {
      // One connection, so the statements prepared below are the ones run after the change.
      const handle = connectDatabase(t.url, { poolSize: 1 });
      try {
        const db = handle.db;
        await sql`create table prep_probe (a integer)`.execute(db);
        await sql`insert into prep_probe (a) values (1)`.execute(db);
        const outside = () => sql`select * from prep_probe where a = ${1}`.execute(db);
        let runs = 0;
        const inside = () =>
          db.transaction().execute(async (trx) => {
            runs++;
            return sql`select * from prep_probe where a = ${1} and true`.execute(trx);
          });
        for (let i = 0; i < 3; i++) {
          await outside();
          await inside();
        }
        await sql`alter table prep_probe add column b integer`.execute(db);
        runs = 0;
        assert.deepEqual((await outside()).rows, [{ a: 1, b: null }]);
        assert.deepEqual((await inside()).rows, [{ a: 1, b: null }]);
        assert.equal(runs, 2, 'the transaction failed on the stale statement once and ran again');
        runs = 0;
        assert.deepEqual((await inside()).rows, [{ a: 1, b: null }]);
        assert.equal(runs, 1, 'then the connection runs that text unnamed');
      } finally {
        await handle.db.destroy();
      }
    });

    it('writes and reads through the API keep working once their statements are prepared', async () => {
      // More than five runs of each statement: PostgreSQL switches to a generic plan after the fifth.
      const uuids: string[] = [];
      for (let i = 0; i < 8; i++) uuids.push(await createPost(t, alice, `prepared #tagged${i % 2} run ${i}`));
      for (const uuid of uuids) {
        const res = await t.inject({ method: 'GET', url: `/posts/${uuid}`, token: alice.token });
        assert.equal(res.statusCode, 200);
        assert.equal(body(res).data.uuid, uuid);
      }
      assert.equal((await findTag(t, 'hashtag', 'tagged1')).associations_count, 4);
    });
  });
}

// Group commit sends a member's savepoint with its first statement (pg-group-commit.ts).
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`statements sent ahead of a query in its round trip [${dialect.name}]`, () => {
    let url: string;
    let drop: () => Promise<void>;
    const clients: pg.Client[] = [];

    before(async () => {
      ({ url, drop } = await dialect.create());
    });
    after(async () => {
      for (const c of clients) await c.end();
      await drop?.();
    });

    /** A connected client, through prepareStatements unless `plain`; counts the server's ReadyForQuery answers. */
    const connect = async (plain = false) => {
      const client = new pg.Client({ connectionString: url });
      clients.push(client);
      await client.connect();
      if (!plain) prepareStatements(client as unknown as pg.PoolClient);
      const counter = { rounds: 0 };
      (client as unknown as { connection: NodeJS.EventEmitter }).connection.on('readyForQuery', () => {
        counter.rounds++;
      });
      return { client, counter };
    };

    it('runs the statements, then the query, in one round trip, and answers with the query result only', async () => {
      const { client, counter } = await connect();
      const mark = prefixMark(['begin', 'savepoint ahead']);
      const res = await client.query(prefixedText(mark, 'select $1::int + 1 as y'), [6]);
      assert.equal(counter.rounds, 1);
      assert.equal(res.command, 'SELECT');
      assert.deepEqual(res.rows, [{ y: 7 }]);
      // The savepoint exists, so the transaction the prefix began is open.
      await client.query('rollback to savepoint ahead');
      await client.query('rollback');
    });

    it('fails the query with the error of a statement ahead of it, and prepares its named statement next time', async () => {
      const { client } = await connect();
      const text = 'select $1::int * 10 as z';
      await client.query('begin');
      // Run once unnamed, then named (preparedNameOf names it the second time) behind a failing statement.
      await client.query(text, [1]);
      const mark = prefixMark(['release savepoint never_made']);
      await assert.rejects(client.query(prefixedText(mark, text), [2]), (err) => {
        assert.equal((err as { code?: string }).code, '3B001');
        assert.ok(failedAhead(err), 'a statement ahead of the query failed');
        return true;
      });
      await client.query('rollback');
      await client.query('begin');
      const res = await client.query(text, [3]);
      assert.deepEqual(res.rows, [{ z: 30 }]);
      const named = await client.query('select statement from pg_prepared_statements');
      assert.deepEqual(
        named.rows.map((r) => r.statement),
        [text],
      );
      await client.query('rollback');
    });

    it('prepares a named statement again whose own Parse failed after the statements ahead of it ran', async () => {
      const { client } = await connect();
      // Refused by the parser every time; named the second time it runs (preparedNameOf).
      const text = 'select $1::int as w from';
      const mark = prefixMark(['savepoint before_bad']);
      await client.query('begin');
      await assert.rejects(client.query(text, [1]), { code: '42601' });
      await client.query('rollback');
      await client.query('begin');
      await assert.rejects(client.query(prefixedText(mark, text), [2]), (err) => {
        assert.equal((err as { code?: string }).code, '42601');
        assert.ok(!failedAhead(err), 'the statements ahead ran');
        return true;
      });
      await client.query('rollback');
      await client.query('begin');
      // Parsed again, so refused by the parser again: not a missing prepared statement (26000).
      await assert.rejects(client.query(text, [3]), { code: '42601' });
      await client.query('rollback');
    });

    it('is refused by the server when the client does not send statements ahead', async () => {
      const { client } = await connect(true);
      const mark = prefixMark(['begin']);
      await assert.rejects(client.query(prefixedText(mark, 'select $1::int as x'), [1]), { code: '42601' });
    });
  });
}

describe('prepared statement names', () => {
  it('still names a repeated statement after many statements that ran once', () => {
    for (let i = 0; i < 5 * MAX_PREPARED; i++) preparedNameOf(`select 'once ${i}' where $1::int = 1`);
    const text = 'select 3 where $1::int = 3';
    assert.equal(preparedNameOf(text), undefined);
    assert.ok(preparedNameOf(text));
  });

  it('names a statement the second time it runs, stops at the cap and keeps the names it gave', () => {
    const text = (i: number) => `select ${i} where $1::int = 1`;
    assert.equal(preparedNameOf(text(-1)), undefined, 'seen once');
    const first = preparedNameOf(text(-1));
    assert.ok(first);
    for (let i = 0; i < MAX_PREPARED; i++) {
      preparedNameOf(text(i));
      preparedNameOf(text(i));
    }
    assert.equal(preparedNameOf(text(-1)), first);
    preparedNameOf('select 2 where $1::int = 2');
    assert.equal(preparedNameOf('select 2 where $1::int = 2'), undefined);
  });
});
