import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'social-server-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ['src/server.ts'], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
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

async function waitFor(url: string): Promise<Response> {
  for (let i = 0; i < 100; i++) {
    try {
      return await fetch(url);
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${url} did not answer`);
}

describe('server process', () => {
  it('stops at start with a message naming a bad variable', async () => {
    const s = start({ PORT: 'not-a-port', DATABASE_URL: `sqlite:${join(dir, 'a.db')}` });
    assert.equal(await s.exited, 1);
    assert.match(s.output(), /PORT/);
  });

  it('starts on an embedded database, migrates it, and shuts down gracefully on SIGTERM', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const s = start({ PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'b.db')}` });
    const res = await waitFor(`http://127.0.0.1:${port}/ready`);
    assert.equal(res.status, 200);
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
  });
});
