import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';

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
