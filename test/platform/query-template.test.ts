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
