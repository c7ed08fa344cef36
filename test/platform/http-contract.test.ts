import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';

for (const dialect of testDialects()) {
  describe(`HTTP contract [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t?.close());

    it('answers /health and /ready without a token', async () => {
      for (const url of ['/health', '/ready']) {
        const res = await t.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 200);
        assert.equal(body(res).status, 'OK');
        assert.equal(typeof body(res).timestamp, 'number');
        assert.ok(res.headers['x-request-id']);
        assert.equal(res.headers['x-powered-by'], undefined);
        assert.match(String(res.headers['content-type']), /application\/json; charset=utf-8/);
      }
    });

    it('answers an unknown route with 404 not_found in the envelope', async () => {
      const res = await t.inject({ method: 'GET', url: '/no/such/thing' });
      assert.equal(res.statusCode, 404);
      const b = body(res);
      assert.equal(b.status, 'ERROR');
      assert.equal(b.error.code, 'not_found');
      assert.equal(typeof b.timestamp, 'number');
      assert.equal(b.error.request_id, res.headers['x-request-id']);
    });

    it('answers a known path with another method with 405 and Allow', async () => {
      const res = await t.inject({ method: 'DELETE', url: '/health' });
      assert.equal(res.statusCode, 405);
      assert.equal(body(res).error.code, 'method_not_allowed');
      assert.match(String(res.headers.allow), /GET/);
    });

    it('answers a trailing-slash variant of a path as an unknown route, not a contradictory 405', async () => {
      const res = await t.inject({ method: 'POST', url: '/oauth/token/' });
      assert.equal(res.statusCode, 404);
      assert.equal(body(res).error.code, 'not_found');
    });

    it('answers a write whose referenced item vanished meanwhile with 409 conflict, storing nothing', async () => {
      // A concurrent delete between the checks and the insert surfaces as a foreign-key violation; simulate one.
      const user = await t.createUser();
      let armed = true;
      t.ctx.bus.on(['networkCreated'], async (trx) => {
        if (!armed) return;
        armed = false;
        await trx
          .insertInto('friends')
          .values({ user_uuid: user.uuid, friend_uuid: 'no-such-user' })
          .execute();
      });
      const res = await t.inject({
        method: 'POST',
        url: '/networks',
        token: user.token,
        payload: { name: 'n' },
      });
      assert.equal(res.statusCode, 409, res.body);
      assert.equal(body(res).error.code, 'conflict');
      const rows = await t.ctx.db.selectFrom('networks').select('uuid').execute();
      assert.equal(rows.length, 0);
    });

    it('echoes a safe incoming X-Request-Id and replaces an unsafe one', async () => {
      const good = await t.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'abc-123' } });
      assert.equal(good.headers['x-request-id'], 'abc-123');
      const bad = await t.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'a b\nc' } });
      assert.notEqual(bad.headers['x-request-id'], 'a b\nc');
    });

    it('serves /openapi.json as OpenAPI 3.1 and /metrics in Prometheus format', async () => {
      const doc = await t.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(doc.statusCode, 200);
      assert.equal(body(doc).openapi, '3.1.0');
      assert.ok(body(doc).paths['/health']);
      const metrics = await t.inject({ method: 'GET', url: '/metrics' });
      assert.equal(metrics.statusCode, 200);
      assert.match(metrics.body, /http_requests_total/);
      assert.match(metrics.body, /http_request_duration_seconds_bucket/);
    });
  });
}
