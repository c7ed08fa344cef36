import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, ROOT, waitFor } from './support.ts';

// `npm run demo` end to end at a small size: it recreates its database, builds the world, starts the API and prints
// a token and examples; the printed token then works for a search. (The world generator has its own tests.)
describe('npm run demo', () => {
  let dir: string;
  let child: ChildProcess;
  let out = '';
  let err = '';
  let port: number;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'social-demo-'));
    // A leftover database must be replaced, not reused.
    writeFileSync(join(dir, 'demo.db'), 'not a database');
    port = await freePort();
    const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), HOST: '127.0.0.1' };
    delete env.NODE_TEST_CONTEXT;
    delete env.DATABASE_URL;
    child = spawn(
      process.execPath,
      ['src/cli/demo.ts', '--db', join(dir, 'demo.db'), '--users', '30', '--posts', '200'],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (d) => {
      out += d;
    });
    child.stderr?.on('data', (d) => {
      err += d;
    });
    await waitFor(
      'the demo to print its token',
      () => {
        if (child.exitCode !== null) throw new Error(`demo exited ${child.exitCode}: ${err}${out}`);
        return /TOKEN=\S+/.test(out) && /Try:[\s\S]*karma/.test(out);
      },
      60_000,
    ).catch((e) => {
      throw new Error(`${(e as Error).message}\n${err}\n${out}`);
    });
  });

  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a --db that is the API's own database, deleting nothing", async () => {
    const own = join(dir, 'social.db');
    writeFileSync(own, 'the API database');
    // Named directly, and through a symlink to it.
    const link = join(dir, 'link-to-social.db');
    symlinkSync(own, link);
    for (const db of [own, link]) {
      const env: Record<string, string | undefined> = { ...process.env, DATABASE_URL: `sqlite:${own}` };
      delete env.NODE_TEST_CONTEXT;
      const refused = spawn(process.execPath, ['src/cli/demo.ts', '--db', db], { cwd: ROOT, env });
      let said = '';
      refused.stderr?.on('data', (d) => {
        said += d;
      });
      const code = await new Promise((r) => refused.once('exit', r));
      assert.equal(code, 1, db);
      assert.match(said, /the API's own database/);
      assert.ok(existsSync(own), 'the file is still there');
    }
  });

  it('shows progress while it builds the world, then prints the counts', () => {
    assert.match(err, /users\s+\[#+/);
    assert.match(err, /posts\s+\[#+.*100%/);
    assert.match(out, /Demo world ready in [\d.]+ s: \d+ users, \d+ friendships, \d+ networks, 200 posts/);
    assert.ok(existsSync(join(dir, 'demo.db')));
  });

  it('prints a token that works and three example requests', async () => {
    const token = /TOKEN=(\S+)/.exec(out)?.[1] as string;
    const examples = out.split('\n').filter((l) => l.trim().startsWith('curl '));
    assert.equal(examples.length, 3);
    for (const e of examples) assert.match(e, new RegExp(`http://127\\.0\\.0\\.1:${port}/`));
    const me = await fetch(`http://127.0.0.1:${port}/me`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { data: { username: string } }).data.username, 'bench_user');
  });

  it('answers the first example: a search over the demo world with the printed token', async () => {
    const token = /TOKEN=(\S+)/.exec(out)?.[1] as string;
    const query = /--data-urlencode 'query=([^']+)' \S+\/search/.exec(out)?.[1] as string;
    assert.ok(query, 'the first example is a search');
    const url = new URL(`http://127.0.0.1:${port}/search`);
    url.searchParams.set('query', query);
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { data: unknown[] };
    assert.ok(body.data.length > 0, `the demo search finds something: ${JSON.stringify(body)}`);
    // The other two examples answer too.
    for (const path of [
      `/tags?filterby[name][like]=${encodeURIComponent(`${query.slice(0, 3)}%`)}`,
      '/karma?sortby[points]=desc',
    ]) {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(r.status, 200, path);
      assert.ok(((await r.json()) as { data: unknown[] }).data.length > 0, path);
    }
  });
});
