import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase } from '../../src/db/connect.ts';
import { startTestApp, type TestApp, testDialects } from '../helper.ts';

// What every request costs beyond its own work: one log line when answered (not two), and exact request counts in
// /metrics although they are kept outside prom-client between scrapes.
for (const dialect of testDialects()) {
  describe(`per-request logging and metrics [${dialect.name}]`, () => {
    let t: TestApp;
    let logged: Awaited<ReturnType<typeof buildApp>>;
    let handle: ReturnType<typeof connectDatabase>;
    const lines: Record<string, unknown>[] = [];

    before(async () => {
      t = await startTestApp(dialect);
      handle = connectDatabase(t.url, { synchronous: 'NORMAL', poolSize: 2, readers: 0 });
      const config = loadConfig({}, { DATABASE_URL: t.url, LOG_LEVEL: 'info' });
      const stream = new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
          done();
        },
      });
      logged = await buildApp(config, {
        handle,
        skipMigrations: true,
        logger: { level: 'info', stream },
      });
    });
    after(async () => {
      await logged?.app.close();
      await handle?.db.destroy();
      await t?.close();
    });

    it('never logs a password, secret or token given in the query string', async () => {
      lines.length = 0;
      const res = await logged.app.inject({
        method: 'POST',
        url: '/oauth/token?grant_type=password&username=ada&password=hunter2&client_secret=s3cr3t&access_token=t0k3n',
      });
      assert.equal(res.statusCode, 400, res.body);
      const line = lines.find((l) => l.reqId === res.headers['x-request-id']) as { req: { url: string } };
      assert.equal(
        line.req.url,
        '/oauth/token?grant_type=password&username=ada&password=***&client_secret=***&access_token=***',
      );
      assert.doesNotMatch(JSON.stringify(lines), /hunter2|s3cr3t|t0k3n/);
    });

    it('logs each request once, when answered, with the request, status and time', async () => {
      lines.length = 0;
      const ok = await logged.app.inject({ method: 'GET', url: '/health' });
      const refused = await logged.app.inject({ method: 'GET', url: '/tags?limit=1' });
      assert.equal(ok.statusCode, 200);
      assert.equal(refused.statusCode, 401);
      const requestLines = lines.filter((l) => l.reqId !== undefined);
      assert.equal(requestLines.length, 2, JSON.stringify(requestLines));
      assert.ok(!requestLines.some((l) => l.msg === 'incoming request'));
      const [first, second] = requestLines as {
        reqId: string;
        msg: string;
        req: { method: string; url: string };
        res: { statusCode: number };
        responseTime: number;
      }[];
      assert.equal(first?.msg, 'request completed');
      assert.equal(first?.reqId, ok.headers['x-request-id']);
      assert.deepEqual([first?.req.method, first?.req.url, first?.res.statusCode], ['GET', '/health', 200]);
      assert.equal(typeof first?.responseTime, 'number');
      assert.equal(second?.reqId, refused.headers['x-request-id']);
      assert.deepEqual([second?.req.url, second?.res.statusCode], ['/tags?limit=1', 401]);
    });

    it('counts answered requests per route and status exactly', async () => {
      const count = async () => {
        const text = (await t.inject({ method: 'GET', url: '/metrics' })).body;
        const m = /^http_requests_total\{method="GET",route="\/health",status="200"\} (\d+)$/m.exec(text);
        return Number(m?.[1] ?? 0);
      };
      const before = await count();
      for (let i = 0; i < 3; i++) await t.inject({ method: 'GET', url: '/health' });
      assert.equal(await count(), before + 3);
      assert.equal(await count(), before + 3, 'a second scrape does not count twice');
    });
  });
}
