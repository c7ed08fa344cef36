// Every branch of the two files the coverage check holds at 100%: the access checks (access.plugin.ts) and the
// list-query engine (list-query.ts). The matrix drives the access checks through the real routes; this file adds the
// paths no real route takes (misdeclared routes, hooks given as one function or a list, owner routes without a kind).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Context } from '../../src/context.ts';
import { uuidv7 } from '../../src/db/time.ts';
import { ApiError, type ErrorDetail } from '../../src/http/errors.ts';
import {
  applyFilters,
  applyOrderAndWindow,
  type ListQuery,
  parseListQuery,
  parseUuidList,
  type Whitelist,
} from '../../src/http/list-query.ts';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { fastUser, type WorldUser } from './world.ts';

const WL: Whitelist = {
  name: { column: 'name', type: 'string', keyColumn: 'name_key', normalize: (v) => v.trim().toLowerCase() },
  title: { column: 'title', type: 'string' },
  points: { column: 'points', type: 'integer' },
  created_at: { column: 'created_at', type: 'datetime' },
  user_uuid: { column: 'user_uuid', type: 'uuid' },
  kind: { column: 'kind', type: 'enum', values: ['a', 'b'] },
  tag: { column: 'tag', type: 'enum', values: ['x'], normalize: (v) => `n:${v}` },
};

function refused(query: Record<string, unknown>, whitelist: Whitelist = WL): ErrorDetail[] {
  try {
    parseListQuery(query, whitelist, 1000);
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'invalid_request');
    return err.details ?? [];
  }
  assert.fail(`accepted ${JSON.stringify(query)}`);
}

describe('list query engine: every branch', () => {
  it('parses uuid lists: absent, arrays, comma lists, blanks, duplicates, case', () => {
    const d: ErrorDetail[] = [];
    assert.equal(parseUuidList('uuids', undefined, d), undefined);
    const a = uuidv7();
    const b = uuidv7();
    assert.deepEqual(parseUuidList('uuids', `${a.toUpperCase()}, ,${b},,${a}`, d), [a, b]);
    assert.deepEqual(parseUuidList('uuids', [a, `${b},`], d), [a, b]);
    assert.equal(d.length, 0);
    assert.equal(parseUuidList('uuids', [a, 5], d), undefined);
    assert.equal(parseUuidList('uuids', 'nope', d), undefined);
    assert.equal(parseUuidList('uuids', Array.from({ length: 101 }, () => uuidv7()).join(','), d), undefined);
    assert.deepEqual(
      d.map((x) => x.message),
      ['must be uuid strings, as an array or comma-separated', '"nope" is not a uuid', 'at most 100 uuids'],
    );
  });

  it('parses every property type and operator, with and without normalization', () => {
    const first = parseListQuery(
      {
        filterby: {
          name: { eq: ' Ada ', ne: 'B', like: 'A%', gt: 'M' },
          title: { eq: 'T', like: 'Ti%' },
          points: { ge: '-5', lt: '2147483647' },
          created_at: { le: '2026-01-31T12:00:00Z' },
        },
        sortby: { points: 'desc', name: 'asc' },
        limit: 5,
        page: 3,
      },
      WL,
      1000,
    );
    const second = parseListQuery(
      {
        filterby: {
          user_uuid: { eq: 'AAAAAAAA-AAAA-7AAA-8AAA-AAAAAAAAAAAA', like: 'AA%' },
          kind: 'a',
          tag: { eq: 'x', like: 'X%' },
        },
      },
      WL,
      1000,
    );
    assert.deepEqual(
      [...first.filters, ...second.filters],
      [
        { column: 'name_key', op: 'eq', value: 'ada' },
        { column: 'name_key', op: 'ne', value: 'b' },
        { column: 'name_key', op: 'like', value: 'a%' },
        { column: 'name', op: 'gt', value: 'M' },
        { column: 'title', op: 'eq', value: 'T' },
        { column: 'title', op: 'like', value: 'ti%' },
        { column: 'points', op: 'ge', value: -5 },
        { column: 'points', op: 'lt', value: 2147483647 },
        { column: 'created_at', op: 'le', value: '2026-01-31T12:00:00.000Z' },
        { column: 'user_uuid', op: 'eq', value: 'aaaaaaaa-aaaa-7aaa-8aaa-aaaaaaaaaaaa' },
        { column: 'user_uuid', op: 'like', value: 'aa%' },
        { column: 'kind', op: 'eq', value: 'a' },
        { column: 'tag', op: 'eq', value: 'x' },
        { column: 'tag', op: 'in', value: [] }, // 'n:X%' matches none of the enumeration's words
      ],
    );
    assert.deepEqual(first.sort, [
      { column: 'points', direction: 'desc' },
      { column: 'name', direction: 'asc' },
    ]);
    assert.deepEqual({ offset: first.offset, limit: first.limit }, { offset: 10, limit: 5 });
    assert.deepEqual({ offset: second.offset, limit: second.limit }, { offset: 0, limit: 20 });
    assert.equal(first.uuids, undefined);
  });

  it('drops every filter when uuids is given', () => {
    const u = uuidv7();
    const lq = parseListQuery({ uuids: u, filterby: { kind: 'a' } }, WL, 1000);
    assert.deepEqual(lq.filters, []);
    assert.deepEqual(lq.uuids, [u]);
  });

  it('lists every problem of a bad query in one 400', () => {
    const fields = refused({
      sortby: { nope: 'asc', name: 'up', constructor: 'asc' },
      filterby: {
        nope: { eq: '1' },
        __proto__x: '1',
        name: { regex: 'x', eq: ['a', 'b'], gt: 'x'.repeat(201) },
        points: { like: '1%', eq: '1.5', ne: '99999999999' },
        created_at: { eq: 'yesterday' },
      },
      uuids: 'bad',
      offset: 5,
      page: 2,
    }).map((x) => x.field);
    assert.deepEqual(fields, [
      'sortby[nope]',
      'sortby[name]',
      'sortby[constructor]',
      'uuids',
      'filterby[nope]',
      'filterby[__proto__x]',
      'filterby[name][regex]',
      'filterby[name][eq]',
      'filterby[name][gt]',
      'filterby[points][like]',
      'filterby[points][eq]',
      'filterby[points][ne]',
      'filterby[created_at][eq]',
      'page',
    ]);
    const more = refused({
      filterby: {
        created_at: { gt: '2026-99' },
        user_uuid: { eq: 'not-a-uuid' },
        kind: { eq: 'c' },
        title: { like: 'ends with \\' },
      },
    }).map((x) => x.field);
    assert.deepEqual(more, [
      'filterby[created_at][gt]',
      'filterby[user_uuid][eq]',
      'filterby[kind][eq]',
      'filterby[title][like]',
    ]);
  });

  it('refuses sortby and filterby that are not objects, and too many keys', () => {
    assert.deepEqual(
      refused({ sortby: 'name', filterby: ['x'] }).map((x) => x.field),
      ['sortby', 'filterby'],
    );
    const many = Object.fromEntries(Object.keys(WL).map((k) => [k, 'asc']));
    assert.ok(refused({ sortby: many }).some((x) => x.message === 'at most 5 sort keys'));
    const filters = {
      points: { eq: '1', ne: '2', gt: '3', ge: '4', lt: '5', le: '6' },
      title: { eq: 'a', ne: 'b', gt: 'c', ge: 'd', lt: 'e' },
    };
    assert.ok(refused({ filterby: filters }).some((x) => x.message === 'at most 10 filter clauses'));
    assert.ok(refused({ offset: 1001 }).some((x) => x.field === 'offset'));
  });

  it('passes on an unexpected failure of the paging rules instead of hiding it', () => {
    const boom = new Error('paging broke');
    const query = {
      get offset(): number {
        throw boom;
      },
    };
    assert.throws(() => parseListQuery(query, WL, 1000), boom);
    const bare = new ApiError('invalid_request', 'no details');
    const query2 = {
      get limit(): number {
        throw bare;
      },
    };
    assert.throws(() => parseListQuery(query2, WL, 1000), bare);
  });

  for (const dialect of testDialects()) {
    describe(`SQL of a list query [${dialect.name}]`, () => {
      let t: TestApp;
      before(async () => {
        t = await startTestApp(dialect);
      });
      after(async () => t?.close());

      const base = (): ListQuery => ({ offset: 0, limit: 10, sort: [], filters: [], uuids: undefined });
      const compile = (lq: ListQuery, defaultSort?: ListQuery['sort']) => {
        const qb = applyOrderAndWindow(
          applyFilters(t.ctx.db.selectFrom('tags').select('uuid'), lq, 'uuid'),
          lq,
          'uuid',
          defaultSort,
        );
        return qb.compile();
      };

      it('binds every value, orders with a uuid tie-breaker and runs on the engine', async () => {
        const empty = compile({ ...base(), uuids: [] });
        assert.match(empty.sql, /in \(/);
        assert.deepEqual(empty.parameters.slice(0, 1), ['']);
        const listed = compile({ ...base(), uuids: ['a', 'b'] });
        assert.deepEqual(listed.parameters.slice(0, 2), ['a', 'b']);
        const filtered = compile(
          {
            ...base(),
            filters: [
              { column: 'name_key', op: 'like', value: "x'%" },
              { column: 'associations_count', op: 'ge', value: 1 },
            ],
            sort: [{ column: 'name', direction: 'desc' }],
          },
          [{ column: 'created_at', direction: 'asc' }],
        );
        assert.ok(filtered.parameters.includes("x'%"));
        assert.doesNotMatch(filtered.sql, /x'%/);
        assert.match(filtered.sql, /nulls last/);
        assert.match(filtered.sql, /desc nulls last, "uuid" desc/);
        const byDefault = compile(base(), [{ column: 'created_at', direction: 'asc' }]);
        assert.match(byDefault.sql, /"created_at" asc nulls first, "uuid" asc/);
        const bare = compile(base());
        assert.match(bare.sql, /order by "uuid" asc/);
        // The primary key needs no NULLS clause, which would keep PostgreSQL from walking its index, and no second
        // mention as the tie-breaker, which would make SQLite sort instead of walking its index.
        for (const direction of ['asc', 'desc'] as const) {
          const byUuid = compile({ ...base(), sort: [{ column: 'uuid', direction }] });
          assert.match(byUuid.sql, new RegExp(`order by "uuid" ${direction} limit`));
          const uuidFirst = compile({
            ...base(),
            sort: [
              { column: 'uuid', direction },
              { column: 'name', direction: 'asc' },
            ],
          });
          assert.match(
            uuidFirst.sql,
            new RegExp(`order by "uuid" ${direction}, "name" asc nulls first limit`),
          );
        }
        // The defensive fallback of the tie-breaker's direction (a sort entry without one) still orders by uuid asc.
        const undirected = compile({ ...base(), sort: [{ column: 'name', direction: undefined as never }] });
        assert.match(undirected.sql, /"uuid" asc/);
        for (const c of [empty, listed, filtered, byDefault, bare]) {
          await t.ctx.db.executeQuery(c);
        }
      });

      it('hints filters on one value of skewed columns as selective, and only those', async () => {
        const lq: ListQuery = {
          ...base(),
          filters: [
            { column: 'tag_type', op: 'eq', value: 'mention' },
            { column: 'tag_type', op: 'in', value: ['hashtag'] },
            { column: 'tag_type', op: 'in', value: ['hashtag', 'mention'] },
            { column: 'tag_type', op: 'ne', value: 'emotion' },
            { column: 'name_key', op: 'eq', value: 'x' },
          ],
        };
        const hinted = applyFilters(
          t.ctx.db.selectFrom('tags').select('uuid'),
          lq,
          'uuid',
          new Set(['tag_type']),
        );
        const { sql: text } = hinted.compile();
        assert.equal(text.match(/likelihood\(/g)?.length, 2, text);
        assert.match(text, /likelihood\("tag_type" = (\?|\$1), 0\.05\)/);
        assert.match(text, /likelihood\("tag_type" in \((\?|\$2)\), 0\.05\)/);
        assert.match(text, / and "tag_type" in \((\?|\$3), (\?|\$4)\) and /);
        assert.match(text, / and "tag_type" <> (\?|\$5)/);
        const plain = applyFilters(t.ctx.db.selectFrom('tags').select('uuid'), lq, 'uuid').compile();
        assert.doesNotMatch(plain.sql, /likelihood/);
        // likelihood() is SQLite's: the repositories pass skewed columns on SQLite only.
        if (dialect.name === 'sqlite') assert.deepEqual((await hinted.execute()).length, 0);
        await t.ctx.db.executeQuery(plain);
      });
    });
  }
});

describe('access checks: every branch', () => {
  const config = () => loadConfig({}, { DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });

  it('refuses to start with a route that declares no access level, or an owner route without a resolver', async () => {
    const cases: [string, (app: FastifyInstance) => void, RegExp][] = [
      ['no config', (app) => app.get('/x', async () => ({})), /declares no access level/],
      [
        'config without access',
        (app) => app.get('/x', { config: {} }, async () => ({})),
        /declares no access level/,
      ],
      [
        'owner without resolver',
        (app) => app.get('/x', { config: { access: 'owner' } }, async () => ({})),
        /owner-only but has no owner resolver/,
      ],
    ];
    for (const [what, add, message] of cases) {
      const { app } = await buildApp(config(), { logger: false });
      try {
        await assert.rejects(
          (async () => {
            add(app);
            await app.ready();
          })(),
          message,
          what,
        );
      } finally {
        await app.close().catch(() => {});
      }
    }
  });

  for (const dialect of testDialects()) {
    describe(`owner and admin checks on hand-made routes [${dialect.name}]`, () => {
      let t: TestApp;
      let owner: WorldUser;
      let other: WorldUser;
      let admin: WorldUser;
      const seen: string[] = [];
      before(async () => {
        t = await startTestApp(dialect);
        owner = await fastUser(t);
        other = await fastUser(t);
        admin = await fastUser(t, 'admin');
      });
      after(async () => t?.close());

      /** A second app on the same database, with routes no module declares. */
      async function handMade(): Promise<FastifyInstance> {
        const { app } = await buildApp(
          { ...t.ctx.config, ENABLED_OPERATIONS: ['tags.create'] },
          {
            handle: { db: t.ctx.db, dialect: t.ctx.dialect } as never,
            skipMigrations: true,
            logger: false,
          },
        );
        const resolver = async (request: FastifyRequest, _ctx: Context) => {
          const id = (request.params as { id: string }).id;
          return id === 'missing' ? undefined : id === 'mine' ? owner.uuid : other.uuid;
        };
        const note = (name: string) => async () => {
          seen.push(name);
        };
        app.get(
          '/hand/plain/:id',
          {
            config: { access: 'owner', owner: resolver },
            onRequest: note('one onRequest'),
            preHandler: note('one preHandler'),
          },
          async () => ({ ok: 'plain' }),
        );
        app.get(
          '/hand/override/:id',
          {
            config: { access: 'owner', owner: resolver, ownerKind: 'widget', adminOverride: true },
            onRequest: [note('list onRequest')],
            preHandler: [note('list preHandler')],
          },
          async () => ({ ok: 'override' }),
        );
        app.get('/hand/admin', { config: { access: 'admin' } }, async () => ({ ok: 'admin' }));
        app.get('/hand/public', { config: { access: 'public' } }, async () => ({ ok: 'public' }));
        app.get('/hand/on', { config: { access: 'logged', operation: 'tags.create' } }, async () => ({
          ok: 'on',
        }));
        app.get('/hand/off', { config: { access: 'none', operation: 'tags.delete' } }, async () => ({
          ok: 'off',
        }));
        await app.ready();
        return app;
      }

      it('passes the owner, an admin where allowed, and hides the item from everyone else', async () => {
        const app = await handMade();
        try {
          const call = async (url: string, token?: string) => {
            const res = await app.inject({
              method: 'GET',
              url,
              headers: token ? { authorization: `Bearer ${token}` } : {},
            });
            return `${res.statusCode} ${res.statusCode === 200 ? body(res).ok : body(res).error.code}`;
          };
          assert.equal(await call('/hand/plain/mine', owner.token), '200 plain');
          assert.equal(await call('/hand/plain/theirs', owner.token), '404 object_not_found');
          assert.equal(await call('/hand/plain/missing', owner.token), '404 object_not_found');
          assert.equal(
            await call('/hand/plain/theirs', admin.token),
            '404 object_not_found',
            'no admin override',
          );
          assert.equal(await call('/hand/override/theirs', admin.token), '200 override');
          assert.equal(await call('/hand/override/missing', admin.token), '404 object_not_found');
          assert.equal(await call('/hand/override/theirs', other.token), '200 override');
          assert.equal(await call('/hand/override/mine', other.token), '404 object_not_found');
          assert.equal(await call('/hand/admin', admin.token), '200 admin');
          assert.equal(await call('/hand/admin', owner.token), '403 forbidden');
          assert.equal(await call('/hand/admin', t.guest), '403 login_required');
          assert.equal(await call('/hand/admin'), '401 unauthenticated');
          assert.equal(await call('/hand/admin', 'not a token'), '401 unauthenticated');
          assert.equal(await call('/hand/public', t.guest), '200 public');
          assert.equal(await call('/hand/on', owner.token), '200 on');
          assert.equal(await call('/hand/on', t.guest), '403 login_required');
          assert.equal(await call('/hand/off', owner.token), '404 operation_disabled');
          const missing = await app.inject({
            method: 'GET',
            url: '/hand/plain/missing',
            headers: { authorization: `Bearer ${owner.token}` },
          });
          assert.match(body(missing).error.message, /No item with that uuid/);
          const widget = await app.inject({
            method: 'GET',
            url: '/hand/override/missing',
            headers: { authorization: `Bearer ${admin.token}` },
          });
          assert.match(body(widget).error.message, /No widget with that uuid/);
          // The route's own hooks still run, after the access checks.
          for (const name of ['one onRequest', 'one preHandler', 'list onRequest', 'list preHandler']) {
            assert.ok(seen.includes(name), name);
          }
        } finally {
          await app.close();
        }
      });
    });
  }
});
