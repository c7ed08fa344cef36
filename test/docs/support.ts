import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The project root (the server and the scripts are started from here). */
export const ROOT = new URL('../../', import.meta.url).pathname;

/** A free TCP port on 127.0.0.1, as the kernel hands it out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A real API process (node src/server.ts) on its own SQLite file and port. */
export interface RunningServer {
  base: string;
  dir: string;
  /** Where the first start wrote the development client's credentials. */
  devClientFile: string;
  output: () => string;
  stop(): Promise<void>;
}

/** Polls until check() is true or the time is up. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, ms = 20_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Starts `node src/server.ts` exactly as `npm start` does, on a fresh embedded database in a temporary folder. */
export async function startServer(env: Record<string, string> = {}): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), 'social-docs-'));
  const port = await freePort();
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: `sqlite:${join(dir, 'social.db')}`,
    MEDIA_DIR: join(dir, 'media'),
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    ...env,
  };
  // The walkthrough relies on the development client of a first start; a bootstrap client would replace it.
  delete childEnv.BOOTSTRAP_CLIENT;
  delete childEnv.NODE_TEST_CONTEXT;
  const child: ChildProcess = spawn(process.execPath, ['src/server.ts'], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor('the server to answer /ready', async () => {
      if (child.exitCode !== null) throw new Error(`server exited: ${out}`);
      return (await fetch(`${base}/ready`)).ok;
    });
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  const devClientFile = join(dir, 'dev-client.json');
  await waitFor('dev-client.json', () => existsSync(devClientFile), 5000).catch(() => {});
  return { base, dir, devClientFile, output: () => out, stop };
}
