import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  sql,
  type UnknownRow,
} from 'kysely';
import { connectDatabase } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { queryTemplate } from '../../src/db/query-template.ts';
import { testDialects } from '../helper.ts';

/** Counts the queries a handle's plugins saw built (transformQuery), as a statement log does. */
class BuiltQueries implements KyselyPlugin {
  built = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.built++;
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

interface TagValues {
  uuid: string;
  name: string;
  created_at: string;
}

const now = '2026-11-28T00:00:00.000Z';
const tag = (name: string): TagValues => ({ uuid: crypto.randomUUID(), name, created_at: now });

// src/db/query-template.ts: statements compiled once per shape, run with each call's values.
for (const dialect of testDialects()) {
  describe(`query templates [${dialect.name}]`, () => {
    let handle: ReturnType<typeof connectDatabase>;
    let drop: () => Promise<void>;

    before(async () => {
      const created = await dialect.create();
      drop = created.drop;
      handle = connectDatabase(created.url, { poolSize: 2 });
      await migrateToLatest(handle.db, handle.dialect);
    });
    after(async () => {
      await handle?.db.destroy();
      await drop?.();
    });

    const insertTags = queryTemplate((db, { rows }: { rows: (TagValues & { count?: number })[] }) =>
      db
        .insertInto('tags')
        .values(
          rows.map((r) => ({
            uuid: r.uuid,
            name: r.name,
            name_key: r.name,
            tag_type: 'hashtag',
            associations_count: r.count ?? 0,
            created_at: r.created_at,
            updated_at: r.created_at,
          })),
        )
        .returning(['name', 'associations_count']),
    );
    const namesOf = queryTemplate((db, { keys }: { keys: string[] }) =>
      keys.length === 0
        ? db.selectFrom('tags').select('name').where(sql<boolean>`1 = 0`)
        : db.selectFrom('tags').select('name').where('name_key', 'in', keys).orderBy('name'),
    );
    const names = async (keys: string[]) => (await namesOf(handle.db, { keys })).rows.map((r) => r.name);

    it('binds each run its own values, for lists of every length in any order of runs', async () => {
      const inserted = await insertTags(handle.db, { rows: [tag('alpha'), tag('beta'), tag('gamma')] });
      assert.deepEqual(
        inserted.rows.map((r) => r.name),
        ['alpha', 'beta', 'gamma'],
      );
      // An empty list and a list of one are two shapes: one must not run as the other, whichever ran first.
      assert.deepEqual(await names([]), []);
      assert.deepEqual(await names(['gamma']), ['gamma']);
      assert.deepEqual(await names(['beta', 'alpha']), ['alpha', 'beta']);
      assert.deepEqual(await names([]), []);
      assert.deepEqual(await names(['alpha']), ['alpha']);
      assert.deepEqual(await names(['gamma', 'beta', 'alpha']), ['alpha', 'beta', 'gamma']);
      assert.deepEqual(await names(['nothing']), []);
    });

    it('keeps rows whose fields differ apart: a field left out is not another row’s value', async () => {
      const [a, b] = [tag('delta'), tag('epsilon')];
      const first = await insertTags(handle.db, { rows: [{ ...a, count: 5 }] });
      const second = await insertTags(handle.db, { rows: [b] });
      assert.deepEqual(first.rows, [{ name: 'delta', associations_count: 5 }]);
      assert.deepEqual(second.rows, [{ name: 'epsilon', associations_count: 0 }]);
    });

    it('runs inside a transaction and undoes with it', async () => {
      await assert.rejects(
        handle.db.transaction().execute(async (trx) => {
          await insertTags(trx, { rows: [tag('zeta')] });
          assert.deepEqual((await namesOf(trx, { keys: ['zeta'] })).rows, [{ name: 'zeta' }]);
          throw new Error('undo');
        }),
        /undo/,
      );
      assert.deepEqual(await names(['zeta']), []);
    });

    it('builds once per shape: flags, nulls and booleans keyed, every other value bound', async () => {
      let builds = 0;
      const find = queryTemplate(
        (db, v: { key: string | null; since: string; standalone: boolean }, order: 'asc' | 'desc') => {
          builds++;
          return db
            .selectFrom('tags')
            .select('name')
            .where('name_key', 'in', [v.key ?? 'alpha', 'beta'])
            .where('created_at', '>=', v.since)
            .where(sql<boolean>`(standalone = 1) = ${v.standalone}`)
            .orderBy('name', order);
        },
      );
      const past = '2020-01-01T00:00:00.000Z';
      const run = async (key: string | null, order: 'asc' | 'desc', since = past) =>
        (await find(handle.db, { key, since, standalone: false }, order)).rows.map((r) => r.name);
      assert.deepEqual(await run('gamma', 'asc'), ['beta', 'gamma']);
      assert.deepEqual(await run('delta', 'asc'), ['beta', 'delta']);
      assert.equal(builds, 1, 'a second value of one shape runs the compiled statement');
      assert.deepEqual(await run(null, 'asc'), ['alpha', 'beta']);
      assert.deepEqual(await run('gamma', 'desc'), ['gamma', 'beta']);
      assert.deepEqual(await run(null, 'desc'), ['beta', 'alpha']);
      assert.equal(builds, 4, 'a null and each flag are shapes of their own');
      assert.deepEqual(await run('gamma', 'desc', '2030-01-01T00:00:00.000Z'), []);
      assert.equal(builds, 4, 'a time is a value');
      const flagged = await find(handle.db, { key: 'gamma', since: past, standalone: true }, 'asc');
      assert.deepEqual(flagged.rows, [], 'no tag of these was made standalone');
      assert.equal(builds, 5, 'a boolean is keyed by its value');
    });

    it('refuses a value changed before it is bound', async () => {
      const lowered = queryTemplate((db, { name }: { name: string }) =>
        db.selectFrom('tags').select('name').where('name_key', '=', name.toLowerCase()),
      );
      await assert.rejects(lowered(handle.db, { name: 'ALPHA' }), /changed a value before binding it/);
      const pattern = queryTemplate((db, { name }: { name: string }) =>
        db.selectFrom('tags').select('name').where('name_key', 'like', `%${name}%`),
      );
      await assert.rejects(pattern(handle.db, { name: 'lph' }), /changed a value before binding it/);
      const sum = queryTemplate((db, { n }: { n: number }) =>
        db
          .selectFrom('tags')
          .select('name')
          .where('associations_count', '=', n * 2),
      );
      await assert.rejects(sum(handle.db, { n: 1 }), /did arithmetic on a value/);
    });

    it('refuses a value written into the SQL text, and a value no statement binds', async () => {
      const literal = queryTemplate((db, { name }: { name: string }) =>
        db.selectFrom('tags').select('name').where('name_key', '=', sql.lit(name)),
      );
      await assert.rejects(literal(handle.db, { name: 'alpha' }), /wrote a value into its SQL text/);
      const expression = queryTemplate((db, { name }: { name: unknown }) =>
        db
          .selectFrom('tags')
          .select('name')
          .where('name_key', '=', name as string),
      );
      await assert.rejects(
        expression(handle.db, { name: sql`'alpha'` }),
        /value name is not a bindable value/,
      );
      const oneParameter = queryTemplate((db, { keys }: { keys: string[] }) =>
        db.selectFrom('tags').select('name').where('name_key', '=', sql<string>`any(${keys})`),
      );
      await assert.rejects(
        oneParameter(handle.db, { keys: ['alpha'] }),
        /bound a list of values as one parameter/,
      );
    });

    it('builds the query each run on a handle with plugins, so they see it', async () => {
      const plugin = new BuiltQueries();
      const db = handle.db.withPlugin(plugin);
      assert.deepEqual((await namesOf(db, { keys: ['alpha'] })).rows, [{ name: 'alpha' }]);
      assert.deepEqual((await namesOf(db, { keys: ['beta'] })).rows, [{ name: 'beta' }]);
      assert.equal(plugin.built, 2);
    });
  });
}
