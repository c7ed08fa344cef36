// An upload the client abandons halfway (the connection closes before the body is complete) is the client's doing:
// it is answered 400 and logged at info level, never as an unhandled error, and leaves no row or file behind.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { countRows, testDialects } from '../helper.ts';
import { type LoggedApp, startLoggedApp } from '../reliability/support.ts';

for (const dialect of testDialects()) {
  describe(`an interrupted upload [${dialect.name}]`, () => {
    let t: LoggedApp;
    let mediaDir: string;
    let port: number;

    before(async () => {
      mediaDir = mkdtempSync(join(tmpdir(), 'media-abort-'));
      t = await startLoggedApp(dialect, { MEDIA_DIR: mediaDir }, { logLevel: 'info' });
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as { port: number }).port;
    });
    after(async () => {
      await t?.close();
      rmSync(mediaDir, { recursive: true, force: true });
    });

    it('is no unhandled error, stores nothing, and the next request is served', async () => {
      const user = await t.createUser();
      const rows = await countRows(t.ctx.db, 'media');
      const boundary = 'abortboundary';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`;
      const socket = connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(
        [
          'POST /media HTTP/1.1',
          'Host: 127.0.0.1',
          `Authorization: Bearer ${user.token}`,
          `Content-Type: multipart/form-data; boundary=${boundary}`,
          'Content-Length: 200000',
          '',
          '',
        ].join('\r\n'),
      );
      // The PNG signature and some bytes, then the client goes away.
      socket.write(
        Buffer.concat([
          Buffer.from(head),
          Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
          Buffer.alloc(30_000),
        ]),
      );
      await sleep(100);
      socket.destroy();
      await sleep(300);
      const unhandled = t.errors.filter((e) => e.msg === 'unhandled error');
      assert.deepEqual(unhandled, [], JSON.stringify(t.errors));
      const interrupted = t.errors.filter((e) => e.msg === 'request body interrupted');
      assert.equal(interrupted.length, 1, JSON.stringify(t.errors.map((e) => e.msg)));
      assert.equal(interrupted[0]?.level, 30);
      assert.equal(await countRows(t.ctx.db, 'media'), rows);
      assert.deepEqual(readdirSync(mediaDir), []);
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(health.status, 200);
    });
  });
}
