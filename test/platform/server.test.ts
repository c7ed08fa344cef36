import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'social-server-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// A variable set to undefined is left out of the child's environment.
function start(env: Record<string, string | undefined>) {
  const merged = Object.entries({ ...process.env, LOG_LEVEL: 'warn', ...env });
  const child = spawn(process.execPath, ['src/server.ts'], {
    env: Object.fromEntries(merged.filter((e): e is [string, string] => e[1] !== undefined)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

/**
 * A port nothing listens on, chosen by the system. A random one in 20000-40000 could be the local port of one of the
 * outgoing connections other test files hold (Linux hands those out from 32768 up): the server then failed to
 * listen, and the test waited 30 s for an answer.
 */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

// Up to 30 s: a start on a loaded machine (CI runs several test files at once) takes seconds. A server that exited
// meanwhile is reported with what it printed.
async function waitFor(url: string, s: ReturnType<typeof start>): Promise<Response> {
  for (let i = 0; i < 300; i++) {
    try {
      return await fetch(url);
    } catch {
      if (s.child.exitCode !== null)
        throw new Error(`the server exited (${s.child.exitCode}): ${s.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${url} did not answer: ${s.output()}`);
}

describe('server process', () => {
  it('stops at start with a message naming a bad variable', async () => {
    const s = start({ PORT: 'not-a-port', DATABASE_URL: `sqlite:${join(dir, 'a.db')}` });
    assert.equal(await s.exited, 1);
    assert.match(s.output(), /PORT/);
  });

  it('with several workers, stops when a worker fails to start instead of starting others without end', async () => {
    const port = await freePort();
    // Checked in each worker as it builds the app: a misspelt operation name.
    const s = start({
      PORT: String(port),
      WORKERS: '2',
      ENABLED_OPERATIONS: 'tags.craete',
      DATABASE_URL: `sqlite:${join(dir, 'w.db')}`,
    });
    assert.equal(await s.exited, 1);
    assert.match(s.output(), /ENABLED_OPERATIONS/);
    assert.match(s.output(), /before it listened; stopping/);
    assert.doesNotMatch(s.output(), /starting another/);
  });

  it('with several workers, replaces one that dies after the start, keeps serving, and keeps a client disabled since', async (t) => {
    const port = await freePort();
    const url = `sqlite:${join(dir, 'r.db')}`;
    const s = start({
      PORT: String(port),
      WORKERS: '2',
      DATABASE_URL: url,
      REDIS_URL: undefined,
      BOOTSTRAP_CLIENT: 'boot:boot-secret-1',
    });
    // A failed assertion must not leave the server running: the test file would wait for it without end.
    t.after(() => {
      if (s.child.exitCode === null) s.child.kill('SIGTERM');
    });
    assert.equal((await waitFor(`http://127.0.0.1:${port}/ready`, s)).status, 200);
    assert.match(s.output(), /WORKERS=2 without REDIS_URL: .* allow 2 times each budget/);
    // Both workers listening (the primary says so) before one is killed: one killed earlier is a failed start,
    // which stops the server (the test above), and a slow machine (under coverage) got there first.
    for (let i = 0; i < 300 && !/all 2 workers listening/.test(s.output()); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(s.output(), /all 2 workers listening/);
    const pids = execFileSync('ps', ['--ppid', String(s.child.pid), '-o', 'pid='], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
    assert.equal(pids.length, 2);
    // An operator disables the bootstrap client (a leaked secret, say) while the server runs.
    execFileSync(process.execPath, ['src/cli/main.ts', 'clients', 'disable', 'boot'], {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent' },
    });
    process.kill(pids[0] as number, 'SIGKILL');
    for (let i = 0; i < 300 && !/listening in place of one that exited/.test(s.output()); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(s.output(), /exited with null; starting another in 0 s/);
    assert.match(s.output(), /listening in place of one that exited/);
    assert.equal((await waitFor(`http://127.0.0.1:${port}/ready`, s)).status, 200);
    // The replacement did not save BOOTSTRAP_CLIENT again, which would have enabled it: either worker refuses it.
    for (let i = 0; i < 4; i++) {
      const token = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from('boot:boot-secret-1').toString('base64')}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ grant_type: 'client_credentials' }),
      });
      assert.equal(token.status, 401, await token.text());
    }
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
  });

  it('starts on an embedded database, migrates it, and shuts down gracefully on SIGTERM', async () => {
    const port = await freePort();
    const s = start({ PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'b.db')}` });
    const res = await waitFor(`http://127.0.0.1:${port}/ready`, s);
    assert.equal(res.status, 200);
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
  });

  // The settings V8 and glibc read only at start are applied by relaunching the process image (same pid).
  const linux = process.platform === 'linux';
  const startedWith = (pid: number) => ({
    args: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'),
    env: readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'),
  });

  it('runs with its heap and malloc settings applied to its own process', { skip: !linux }, async () => {
    const port = await freePort();
    const s = start({
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, 'c.db')}`,
      HEAP_SEMI_SPACE_MB: '8',
      HEAP_LIMIT_MB: '300',
      NODE_OPTIONS: undefined,
      MALLOC_ARENA_MAX: undefined,
    });
    try {
      const res = await waitFor(`http://127.0.0.1:${port}/ready`, s);
      assert.equal(res.status, 200);
      const { args, env: seen } = startedWith(s.child.pid as number);
      assert.ok(args.includes('--max-semi-space-size=8'), args.join(' '));
      assert.ok(args.includes('--max-old-space-size=300'), args.join(' '));
      assert.ok(seen.includes('MALLOC_ARENA_MAX=2'), 'MALLOC_ARENA_MAX defaults to 2');
    } finally {
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
    }
  });

  it('keeps flags and MALLOC_ARENA_MAX the operator gave, and relaunches for nothing when all are set', {
    skip: !linux,
  }, async () => {
    const port = await freePort();
    const s = start({
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, 'd.db')}`,
      NODE_OPTIONS: '--max-semi-space-size=4 --max-old-space-size=256',
      MALLOC_ARENA_MAX: '1',
    });
    try {
      assert.equal((await waitFor(`http://127.0.0.1:${port}/ready`, s)).status, 200);
      const { args, env } = startedWith(s.child.pid as number);
      assert.ok(!args.some((a) => a.startsWith('--max-')), `no flags added: ${args.join(' ')}`);
      assert.ok(env.includes('MALLOC_ARENA_MAX=1'));
      assert.ok(!env.some((e) => e.startsWith('SOCIAL_API_MEMORY_SETTINGS_APPLIED=')), 'not relaunched');
    } finally {
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
    }
  });
});
