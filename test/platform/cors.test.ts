import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';

const ORIGIN = 'https://app.example';

// CORS is off unless CORS_ORIGINS names origins; with it on, a browser script may call every operation and read the
// headers it needs, and an OPTIONS that is no preflight is answered like any other request with that method.
for (const dialect of testDialects()) {
  describe(`CORS [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { CORS_ORIGINS: [ORIGIN] });
    });
    after(async () => t?.close());

    const preflight = (url: string, method: string, origin = ORIGIN) =>
      t.inject({
        method: 'OPTIONS',
        url,
        headers: {
          origin,
          'access-control-request-method': method,
          'access-control-request-headers': 'authorization, content-type',
        },
      });

    it('allows every method the API uses in a preflight from an allowed origin', async () => {
      for (const [url, method] of [
        ['/posts', 'POST'],
        ['/tags/01a20185-f906-7160-b5dd-42e27955ddcf/update', 'PUT'],
        ['/tag-associations/01a20185-f906-7160-b5dd-42e27955ddcf', 'PATCH'],
        ['/tag-associations/01a20185-f906-7160-b5dd-42e27955ddcf', 'DELETE'],
      ] as const) {
        const res = await preflight(url, method);
        assert.equal(res.statusCode, 204, `${method} ${url}: ${res.body}`);
        assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
        const methods = String(res.headers['access-control-allow-methods']).split(/,\s*/);
        for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) assert.ok(methods.includes(m), m);
        assert.match(String(res.headers['access-control-allow-headers']), /authorization/i);
      }
      const other = await preflight('/posts', 'POST', 'https://evil.example');
      assert.equal(other.headers['access-control-allow-origin'], undefined);
    });

    it('lets a script read the request id, rate-limit and authentication headers', async () => {
      for (const [token, status] of [
        [t.guest, 200],
        [undefined, 401],
      ] as const) {
        const res = await t.inject({ method: 'GET', url: '/tags', token, headers: { origin: ORIGIN } });
        assert.equal(res.statusCode, status, res.body);
        assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
        const exposed = String(res.headers['access-control-expose-headers'])
          .split(/,\s*/)
          .map((h) => h.toLowerCase());
        for (const h of [
          'x-request-id',
          'retry-after',
          'ratelimit-limit',
          'ratelimit-remaining',
          'ratelimit-reset',
          'www-authenticate',
        ]) {
          assert.ok(exposed.includes(h), `${h} in ${exposed.join(', ')}`);
        }
      }
    });

    it('answers an OPTIONS that is no preflight in the envelope: 405 with Allow, or 404', async () => {
      for (const headers of [{}, { origin: ORIGIN }, { 'access-control-request-method': 'POST' }]) {
        const known = await t.inject({ method: 'OPTIONS', url: '/posts', headers });
        assert.equal(known.statusCode, 405, `${JSON.stringify(headers)}: ${known.body}`);
        assert.match(String(known.headers['content-type']), /^application\/json/);
        assert.equal(body(known).error.code, 'method_not_allowed');
        assert.equal(body(known).error.request_id, known.headers['x-request-id']);
        assert.match(String(known.headers.allow), /POST/);
        const unknown = await t.inject({ method: 'OPTIONS', url: '/no/such/thing', headers });
        assert.equal(unknown.statusCode, 404, unknown.body);
        assert.equal(body(unknown).error.code, 'not_found');
      }
    });
  });
}
