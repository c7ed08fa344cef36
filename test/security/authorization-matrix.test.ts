import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { uuidv7 } from '../../src/db/time.ts';
import { body, type TestApp, testDialects } from '../helper.ts';
import { ACCESS_TABLE, normalizePath, routeKey } from './access-table.ts';
import { runMatrix } from './matrix.ts';
import { type DeclaredRoute, servedRoutes, startRecordedApp } from './routes.ts';
import { buildWorld, casesFor, fastUser, type World } from './world.ts';

const tableKeys = () => ACCESS_TABLE.map((r) => routeKey(r.method, r.path));

function difference(a: Iterable<string>, b: Iterable<string>): string[] {
  const set = new Set(b);
  return [...new Set(a)].filter((x) => !set.has(x)).sort();
}

for (const dialect of testDialects()) {
  describe(`authorization matrix [${dialect.name}]`, () => {
    let t: TestApp;
    let declared: DeclaredRoute[];
    let w: World;
    before(async () => {
      ({ t, declared } = await startRecordedApp(dialect, {
        ENABLED_OPERATIONS: ['all'],
        RATE_LIMIT_PER_MINUTE: 1_000_000,
        REGISTRATIONS_PER_MINUTE: 1_000_000,
        PASSWORD_CHANGES_PER_MINUTE: 1_000_000,
      }));
      w = await buildWorld(t);
    });
    after(async () => t?.close());

    it('the table lists every route the app serves, and nothing else', () => {
      const served = servedRoutes(t.app);
      assert.ok(served.length > 50, `only ${served.length} routes read from the routing tree`);
      const gets = new Set(served.filter((r) => r.method === 'GET').map((r) => normalizePath(r.path)));
      const headless = served.filter((r) => r.method === 'HEAD' && !gets.has(normalizePath(r.path)));
      assert.deepEqual(headless, [], 'a HEAD route without its GET');
      const servedKeys = served.filter((r) => r.method !== 'HEAD').map((r) => routeKey(r.method, r.path));
      assert.deepEqual(
        difference(servedKeys, tableKeys()),
        [],
        'routes served but missing from access-table.ts',
      );
      assert.deepEqual(
        difference(tableKeys(), servedKeys),
        [],
        'rows of access-table.ts the app does not serve',
      );
      assert.equal(new Set(tableKeys()).size, ACCESS_TABLE.length, 'a route is listed twice');
    });

    it('the table gives each route the access level, admin override and switch its config declares', () => {
      assert.ok(declared.length > 40, 'the route recorder saw the modules register their routes');
      const byKey = new Map(ACCESS_TABLE.map((r) => [routeKey(r.method, r.path), r]));
      const wrong: string[] = [];
      for (const d of declared) {
        if (d.method === 'HEAD') continue;
        const key = routeKey(d.method, d.url);
        const row = byKey.get(key);
        if (!row) {
          wrong.push(`${key}: declared by a module, not in the table`);
          continue;
        }
        if (d.access !== row.access) wrong.push(`${key}: declares ${d.access}, table says ${row.access}`);
        if (d.adminOverride !== (row.adminOverride ?? false)) wrong.push(`${key}: adminOverride differs`);
        if (d.operation !== row.operation) wrong.push(`${key}: operation ${d.operation} vs ${row.operation}`);
      }
      assert.deepEqual(wrong, []);
    });

    it('the table and the OpenAPI document list the same operations', async () => {
      const doc = body(await t.inject({ method: 'GET', url: '/openapi.json' }));
      const documented: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths as Record<string, object>)) {
        for (const method of Object.keys(ops)) documented.push(routeKey(method, path));
      }
      const listed = ACCESS_TABLE.filter((r) => !r.undocumented).map((r) => routeKey(r.method, r.path));
      assert.deepEqual(difference(documented, listed), [], 'documented but not in the table');
      assert.deepEqual(difference(listed, documented), [], 'in the table but not documented');
    });

    it('every row has its cases, and no case is left without a row', () => {
      const keys = Object.keys(casesFor(w));
      assert.deepEqual(difference(tableKeys(), keys), [], 'rows without cases in world.ts');
      assert.deepEqual(difference(keys, tableKeys()), [], 'cases of routes the table does not list');
    });

    it('every cell answers as DESIGN.md says; hidden items answer exactly like missing ones', async (ctx) => {
      const started = Date.now();
      const { failures, requests, cells } = await runMatrix(w, ACCESS_TABLE);
      ctx.diagnostic(
        `${ACCESS_TABLE.length} routes, ${cells} cells, ${requests} requests in ${Date.now() - started} ms`,
      );
      assert.deepEqual(failures, []);
    });
  });

  describe(`switched-off operations [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      ({ t } = await startRecordedApp(dialect, {
        RATE_LIMIT_PER_MINUTE: 1_000_000,
        REGISTRATIONS_PER_MINUTE: 1_000_000,
        PASSWORD_CHANGES_PER_MINUTE: 1_000_000,
      }));
    });
    after(async () => t?.close());

    it('answer 404 operation_disabled to every caller before any other check', async () => {
      const user = await fastUser(t);
      const admin = await fastUser(t, 'admin');
      const switchable = ACCESS_TABLE.filter((r) => r.switchable);
      assert.ok(switchable.length >= 6);
      for (const row of switchable) {
        const url = row.path.replace(/\{name\}/g, 'like').replace(/\{[^}]+\}/g, () => uuidv7());
        for (const token of [undefined, 'garbage-token', t.guest, user.token, admin.token]) {
          const res = await t.inject({ method: row.method, url, token, payload: {} });
          assert.equal(res.statusCode, 404, `${row.method} ${url}: ${res.body}`);
          assert.equal(body(res).error.code, 'operation_disabled', `${row.method} ${url}`);
        }
      }
    });
  });
}
