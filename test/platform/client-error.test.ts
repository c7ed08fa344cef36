import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { countRows, startTestApp, type TestApp, testDialects } from '../helper.ts';

/** Sends raw bytes to the listening app and returns everything it answers before closing the connection. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      answer += d;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

function parse(answer: string) {
  const [head = '', payload = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...headers] = head.split('\r\n');
  const header = (name: string) =>
    headers
      .find((h) => h.toLowerCase().startsWith(`${name}:`))
      ?.slice(name.length + 1)
      .trim();
  return { statusLine, header, body: JSON.parse(payload) };
}

// Failures Node's HTTP parser reports before any route runs still answer with the error envelope.
for (const dialect of testDialects()) {
  describe(`HTTP-level client errors [${dialect.name}]`, () => {
    let t: TestApp;
    let port: number;

    before(async () => {
      t = await startTestApp(dialect);
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as { port: number }).port;
    });
    after(async () => t?.close());

    it('a header block over 16 KiB: 400 invalid_request in the envelope, then the next request is served', async () => {
      const big = `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
      const res = parse(await rawExchange(port, big));
      assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
      assert.match(res.header('content-type') ?? '', /^application\/json/);
      assert.equal(res.header('cache-control'), 'no-store');
      assert.equal(res.body.status, 'ERROR');
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /size limit/);
      assert.equal(res.body.error.request_id, res.header('x-request-id'));
      assert.equal(typeof res.body.timestamp, 'number');
      const next = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(next.status, 200);
    });

    it('bytes that are not HTTP: 400 invalid_request in the envelope', async () => {
      const res = parse(await rawExchange(port, 'HELLO THERE\r\n\r\n'));
      assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /well-formed HTTP/);
    });

    // Node's bare 417 kept the connection open: without the limit the test waited out the keep-alive timeout.
    it('an Expect other than 100-continue: 400 invalid_request in the envelope with the request id, not a bare 417', {
      timeout: 15_000,
    }, async () => {
      const res = parse(
        await rawExchange(
          port,
          'POST /posts HTTP/1.1\r\nHost: x\r\nExpect: something-unknown\r\nX-Request-Id: expect-1\r\n' +
            'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
        ),
      );
      assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
      assert.match(res.header('content-type') ?? '', /^application\/json; charset=utf-8/);
      assert.equal(res.header('x-request-id'), 'expect-1');
      assert.equal(res.header('cache-control'), 'no-store');
      assert.equal(res.body.status, 'ERROR');
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.request_id, 'expect-1');
      assert.deepEqual(
        res.body.error.details.map((d: { field: string }) => d.field),
        ['Expect'],
      );
      assert.match(res.body.error.message, /something-unknown/);
      // Without an id of its own the request gets a fresh one, in the header and the body alike.
      const fresh = parse(
        await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n'),
      );
      assert.equal(fresh.body.error.code, 'invalid_request');
      assert.match(fresh.header('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(fresh.body.error.request_id, fresh.header('x-request-id'));
      // 100-continue is still met.
      const goOn = await rawExchange(
        port,
        'GET /health HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
      );
      assert.match(goOn, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
    });

    it('a server that waits for requests a bounded time (REQUEST_TIMEOUT_SECONDS, 120 s by default)', () => {
      assert.equal(t.app.server.requestTimeout, 120_000);
      assert.ok(t.app.server.headersTimeout > 0 && t.app.server.headersTimeout <= 60_000);
    });

    it('two Authorization headers: 400 naming the header, whichever caller each one names', async () => {
      const alice = await t.createUser();
      const carol = await t.createUser();
      for (const [first, second] of [
        [carol.token, alice.token],
        [t.guest, alice.token],
      ]) {
        const res = parse(
          await rawExchange(
            port,
            `GET /me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${first}\r\n` +
              `authorization: Bearer ${second}\r\nConnection: close\r\n\r\n`,
          ),
        );
        assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
        assert.equal(res.body.error.code, 'invalid_request');
        assert.equal(res.body.error.details[0].field, 'Authorization');
        // Refused before the token check that marks authenticated answers, and still for that caller only.
        assert.equal(res.header('cache-control'), 'no-store');
      }
      // One header is answered as before.
      const one = await fetch(`http://127.0.0.1:${port}/me`, {
        headers: { authorization: `Bearer ${alice.token}` },
      });
      assert.equal(one.status, 200);
      assert.equal(((await one.json()) as { data: { uuid: string } }).data.uuid, alice.uuid);
    });
  });
}

// A client that sends its headers and then not all of its body held the connection for good: Fastify's default
// request timeout is 0, which switches Node's off.
for (const dialect of testDialects()) {
  describe(`a request that does not arrive in time [${dialect.name}]`, () => {
    let t: TestApp;
    let port: number;

    before(async () => {
      t = await startTestApp(dialect, { REQUEST_TIMEOUT_SECONDS: 1 });
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as { port: number }).port;
    });
    after(async () => t?.close());

    it('a body that stops short: 400 invalid_request in the envelope, the connection closed, nothing stored', {
      timeout: 15_000,
    }, async () => {
      const alice = await t.createUser();
      const started = performance.now();
      const res = parse(
        await rawExchange(
          port,
          `POST /posts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.token}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"body":"hel',
        ),
      );
      const waited = performance.now() - started;
      assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /did not arrive in time/);
      assert.equal(res.body.error.request_id, res.header('x-request-id'));
      assert.equal(res.header('connection'), 'close');
      // One second, found by a check every quarter of it.
      assert.ok(waited >= 900 && waited < 5000, `${Math.round(waited)} ms`);
      assert.equal(await countRows(t.ctx.db, 'posts'), 0);
      // Headers that stop short are cut off alike.
      const headers = parse(await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: '));
      assert.equal(headers.body.error.code, 'invalid_request');
      const next = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(next.status, 200);
    });
  });
}
