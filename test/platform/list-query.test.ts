import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../../src/http/errors.ts';
import {
  applyOrderAndWindow,
  likeToEnumValues,
  parseListQuery,
  type Whitelist,
} from '../../src/http/list-query.ts';
import { resolveWindow } from '../../src/http/paging.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost } from '../tags/support.ts';

const whitelist: Whitelist = {
  uuid: { column: 'uuid', type: 'uuid' },
  name: { column: 'name', type: 'string', keyColumn: 'name_key', normalize: (s) => s.toLowerCase() },
  count: { column: 'associations_count', type: 'integer' },
  kind: { column: 'tag_type', type: 'enum', values: ['hashtag', 'mention'] },
  created_at: { column: 'created_at', type: 'datetime' },
};
const U1 = '0190a1b2-0000-7000-8000-000000000001';

function fails(query: Record<string, unknown>, field: RegExp) {
  assert.throws(
    () => parseListQuery(query, whitelist, 1000),
    (err: unknown) =>
      err instanceof ApiError &&
      err.code === 'invalid_request' &&
      (err.details ?? []).some((d) => field.test(d.field)),
  );
}

describe('list query engine', () => {
  it('parses sortby in order and filterby with every operator', () => {
    const q = parseListQuery(
      {
        sortby: { count: 'desc', name: 'asc' },
        filterby: {
          count: { gt: '1', le: '10', ne: '5', ge: '0', lt: '100' },
          name: { like: 'Caf%' },
          kind: 'hashtag',
          created_at: { ge: '2026-01-01' },
        },
        limit: 5,
        page: 3,
      },
      whitelist,
      1000,
    );
    assert.deepEqual(q.sort, [
      { column: 'associations_count', direction: 'desc' },
      { column: 'name', direction: 'asc' },
    ]);
    assert.deepEqual(
      q.filters.map((f) => [f.column, f.op, f.value]),
      [
        ['associations_count', 'gt', 1],
        ['associations_count', 'le', 10],
        ['associations_count', 'ne', 5],
        ['associations_count', 'ge', 0],
        ['associations_count', 'lt', 100],
        ['name_key', 'like', 'caf%'],
        ['tag_type', 'eq', 'hashtag'],
        ['created_at', 'ge', '2026-01-01T00:00:00.000Z'],
      ],
    );
    assert.equal(q.offset, 10);
    assert.equal(q.limit, 5);
  });

  it('ignores every filter when uuids is given, from an array or a comma list', () => {
    const a = parseListQuery(
      { uuids: `${U1}, ${U1.toUpperCase()}`, filterby: { kind: 'hashtag' } },
      whitelist,
      1000,
    );
    assert.deepEqual(a.uuids, [U1]);
    assert.deepEqual(a.filters, []);
    const b = parseListQuery({ uuids: [U1] }, whitelist, 1000);
    assert.deepEqual(b.uuids, [U1]);
  });

  it('refuses unknown properties, operators, directions and malformed values', () => {
    fails({ sortby: { password_hash: 'asc' } }, /sortby\[password_hash\]/);
    fails({ sortby: { name: 'up' } }, /sortby\[name\]/);
    fails({ sortby: 'name' }, /^sortby$/);
    fails({ filterby: { email: 'x' } }, /filterby\[email\]/);
    fails({ filterby: { name: { regex: 'x' } } }, /filterby\[name\]\[regex\]/);
    fails({ filterby: { count: { gt: 'ten' } } }, /filterby\[count\]\[gt\]/);
    fails({ filterby: { count: { like: '1%' } } }, /filterby\[count\]\[like\]/);
    fails({ filterby: { created_at: { gt: 'yesterday' } } }, /created_at/);
    fails({ filterby: { uuid: { eq: 'not-a-uuid' } } }, /uuid/);
    fails({ filterby: { kind: 'topic' } }, /kind/);
    fails({ filterby: { name: { eq: ['a', 'b'] } } }, /name/);
    fails({ filterby: { name: { like: 'abc\\' } } }, /name/);
    fails({ filterby: 'x' }, /^filterby$/);
    fails({ uuids: 'nope' }, /^uuids$/);
    fails({ uuids: [1] }, /^uuids$/);
    fails(
      {
        uuids: Array.from(
          { length: 101 },
          (_, i) => `0190a1b2-0000-7000-8000-${String(i).padStart(12, '0')}`,
        ).join(','),
      },
      /^uuids$/,
    );
    fails({ filterby: { name: { like: 'x'.repeat(201) } } }, /name/);
  });

  it('refuses impossible calendar dates instead of rolling them over, naming the expected form', () => {
    for (const bad of [
      '2026-02-30',
      '2026-02-29T00:00:00Z',
      '2026-13-01',
      '2026-04-31',
      '2026-00-10',
      '2026-01-00',
    ]) {
      fails({ filterby: { created_at: bad } }, /^filterby\[created_at\]/);
    }
    try {
      parseListQuery({ filterby: { created_at: '2026-02-30' } }, whitelist, 1000);
      assert.fail('2026-02-30 was accepted');
    } catch (err) {
      assert.ok(err instanceof ApiError);
      assert.match(err.message, /YYYY-MM-DD/);
    }
    // Real days still pass, leap days included.
    const ok = parseListQuery(
      { filterby: { created_at: { ge: '2024-02-29', lt: '0001-01-01T00:00:01Z' } } },
      whitelist,
      1000,
    );
    assert.equal(ok.filters.length, 2);
  });

  it('resolves like on an enumeration to the values it matches, with SQL semantics', () => {
    const values = ['post', 'comment', 'x.y', 'xzy', 'q_r', 'p%q'];
    assert.deepEqual(likeToEnumValues('%o%', values), ['post', 'comment']);
    assert.deepEqual(likeToEnumValues('x.y', values), ['x.y'], 'a dot is no wildcard');
    assert.deepEqual(likeToEnumValues('x_y', values), ['x.y', 'xzy']);
    assert.deepEqual(likeToEnumValues('q\\_r', values), ['q_r'], 'an escaped _ is literal');
    assert.deepEqual(likeToEnumValues('p\\%q', values), ['p%q']);
    assert.deepEqual(likeToEnumValues('%tra%', values), []);
    assert.deepEqual(likeToEnumValues('%t', values), ['post', 'comment']);
    assert.deepEqual(
      likeToEnumValues('%o%e%', values),
      ['comment'],
      'a later % may take what an earlier left',
    );
    assert.deepEqual(likeToEnumValues('_%_', ['a', 'ab', 'abc']), ['ab', 'abc']);
    assert.deepEqual(likeToEnumValues('%%', ['', 'a']), ['', 'a']);
    assert.deepEqual(likeToEnumValues('', ['', 'a']), ['']);
    assert.deepEqual(likeToEnumValues('POST', values), ['post'], 'case does not matter');
    assert.deepEqual(likeToEnumValues('é_', ['éa', 'ea']), ['éa'], 'one _ is one character');
    // Many % runs: answered at once (a backtracking regex took minutes for 50 and a b).
    const many = `${'%a'.repeat(30)}b`;
    assert.deepEqual(likeToEnumValues(many, ['a'.repeat(40), `${'a'.repeat(40)}b`]), [`${'a'.repeat(40)}b`]);
    assert.deepEqual(likeToEnumValues(`${'%'.repeat(60)}b`, values), []);
    const lq = parseListQuery({ filterby: { kind: { like: 'HASH%' } } }, whitelist, 1000);
    assert.deepEqual(lq.filters, [{ column: 'tag_type', op: 'in', value: ['hashtag'] }]);
  });

  it('refuses more than 10 filters and 5 sort keys', () => {
    const many = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`p${i}`, 'x']));
    fails({ filterby: many }, /^filterby$/);
    fails({ sortby: { a: 'asc', b: 'asc', c: 'asc', d: 'asc', e: 'asc', f: 'asc' } }, /^sortby$/);
  });

  it('does not treat prototype keys as whitelisted properties', () => {
    fails({ sortby: { constructor: 'asc' } }, /constructor/);
    fails({ filterby: { toString: 'x' } }, /toString/);
    fails({ filterby: { name: { constructor: 'x' } } }, /constructor/);
  });

  it('resolves paging: page to offset, both given is an error, offset bounded', () => {
    assert.deepEqual(resolveWindow({ page: 2, limit: 10 }, 100), { offset: 10, limit: 10 });
    assert.deepEqual(resolveWindow({}, 100), { offset: 0, limit: 20 });
    assert.throws(() => resolveWindow({ page: 2, offset: 3 }, 100), ApiError);
    assert.throws(() => resolveWindow({ offset: 101 }, 100), ApiError);
    fails({ page: 2, offset: 1 }, /page/);
  });
});

for (const dialect of testDialects()) {
  describe(`impossible dates in list filters, through HTTP [${dialect.name}]`, () => {
    let t: TestApp;
    let user: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      user = await t.createUser();
    });
    after(async () => t?.close());

    it('filterby[created_at]=2026-02-30 is a 400 naming the expected form, not March 2', async () => {
      for (const [url, token] of [
        ['/tags?filterby[created_at]=2026-02-30', t.guest],
        ['/tags?filterby[updated_at][lt]=2026-04-31T10:00:00Z', t.guest],
        ['/karma?filterby[created_at][ge]=2025-02-29', user.token],
      ] as const) {
        const res = await t.inject({ method: 'GET', url, token });
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.match(body(res).error.message, /YYYY-MM-DD/);
      }
      const leap = await t.inject({
        method: 'GET',
        url: '/tags?filterby[created_at][ge]=2024-02-29',
        token: t.guest,
      });
      assert.equal(leap.statusCode, 200, leap.body);
    });
  });
}

for (const dialect of testDialects()) {
  describe(`late row lookup of deep pages [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      author = await t.createUser();
      for (let i = 0; i < 6; i++) await createPost(t, author, `late rows ${i} #late${i % 2}`);
    });
    after(async () => t?.close());

    it('reads the same page as the plain window, for every sort and offset', async () => {
      const whitelist: Whitelist = {
        uuid: { column: 'uuid', type: 'uuid' },
        points: { column: 'points', type: 'integer' },
        created_at: { column: 'created_at', type: 'datetime' },
      };
      const records = () => t.ctx.db.selectFrom('karma').selectAll().where('user_uuid', '=', author.uuid);
      const uuids = (rows: { uuid: string }[]) => rows.map((r) => r.uuid);
      const all = uuids(
        await applyOrderAndWindow(
          records(),
          parseListQuery({ limit: 100 }, whitelist, 1000),
          'uuid',
        ).execute(),
      );
      assert.ok(all.length >= 6, `${all.length} karma records`);
      for (const sortby of [
        {},
        { uuid: 'desc' },
        { points: 'asc', created_at: 'desc' },
        { created_at: 'asc' },
      ]) {
        for (const offset of [0, 1, 4]) {
          const lq = parseListQuery({ sortby, offset, limit: 2 }, whitelist, 1000);
          const plain = uuids(await applyOrderAndWindow(records(), lq, 'uuid').execute());
          const late = uuids(
            await applyOrderAndWindow(records(), lq, 'uuid', [], { lateRowsFrom: 0 }).execute(),
          );
          assert.deepEqual(late, plain, JSON.stringify({ sortby, offset }));
          assert.equal(plain.length, Math.min(2, all.length - offset));
        }
      }
      // Below the threshold the window is the plain one; past the last row both are empty.
      const shallow = parseListQuery({ offset: 1, limit: 2 }, whitelist, 1000);
      assert.deepEqual(
        uuids(await applyOrderAndWindow(records(), shallow, 'uuid', [], { lateRowsFrom: 5 }).execute()),
        all.slice(1, 3),
      );
      const past = parseListQuery({ offset: all.length, limit: 2 }, whitelist, 1000);
      assert.deepEqual(
        await applyOrderAndWindow(records(), past, 'uuid', [], { lateRowsFrom: 0 }).execute(),
        [],
      );
    });
  });
}

for (const dialect of testDialects()) {
  describe(`PAGE_LIMIT_MAX below the default page size [${dialect.name}]`, () => {
    let t: TestApp;
    let user: TestUser;
    before(async () => {
      t = await startTestApp(dialect, { PAGE_LIMIT_MAX: 3 });
      user = await t.createUser();
      for (let i = 0; i < 5; i++) await createPost(t, user, `paging post ${i} #smallpages`);
    });
    after(async () => t?.close());

    it('a list or search without limit answers pages of PAGE_LIMIT_MAX, and a larger limit is a 400', async () => {
      for (const url of [
        `/tag-associations?filterby[user_uuid]=${user.uuid}`,
        '/search?query=paging',
        '/karma',
      ]) {
        const res = await t.inject({ method: 'GET', url, token: user.token });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        assert.equal(body(res).data.length, 3, url);
        assert.equal(body(res).count.limit, 3, url);
      }
      const over = await t.inject({ method: 'GET', url: '/karma?limit=4', token: user.token });
      assert.equal(over.statusCode, 400, over.body);
      assert.match(body(over).error.message, /limit/);
    });
  });
}
