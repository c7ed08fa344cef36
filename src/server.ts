import cluster from 'node:cluster';
import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { connectDatabase } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}

// Set in the environment of a process image started by relaunchWithMemorySettings: it never starts another.
const RELAUNCHED = 'SOCIAL_API_MEMORY_SETTINGS_APPLIED';
// Set in the environment of a worker forked in place of one that exited: it skips the one-time starts.
const REPLACEMENT = 'SOCIAL_API_REPLACEMENT_WORKER';

/**
 * Applies the memory settings that only take effect when a process starts (V8's heap sizes, glibc's arena limit)
 * by replacing this process's image with one started with them: same pid, same open stdio, nothing running yet.
 * A flag given on the command line or in NODE_OPTIONS, or MALLOC_ARENA_MAX already in the environment, wins.
 */
function relaunchWithMemorySettings(config: Config): void {
  if (process.env[RELAUNCHED] || typeof process.execve !== 'function') return;
  // Node takes `--max_old_space_size` for `--max-old-space-size`: compared with dashes throughout.
  const given = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`.replaceAll('_', '-');
  const flags: string[] = [];
  if (config.HEAP_SEMI_SPACE_MB > 0 && !given.includes('--max-semi-space-size')) {
    flags.push(`--max-semi-space-size=${config.HEAP_SEMI_SPACE_MB}`);
  }
  if (config.HEAP_LIMIT_MB > 0 && !given.includes('--max-old-space-size')) {
    flags.push(`--max-old-space-size=${config.HEAP_LIMIT_MB}`);
  }
  const env: Record<string, string> = {};
  if (config.MALLOC_ARENA_MAX > 0 && process.env.MALLOC_ARENA_MAX === undefined) {
    env.MALLOC_ARENA_MAX = String(config.MALLOC_ARENA_MAX);
  }
  if (flags.length === 0 && Object.keys(env).length === 0) return;
  process.execve(
    process.execPath,
    [process.execPath, ...flags, ...process.execArgv, ...process.argv.slice(1)],
    {
      ...process.env,
      ...env,
      [RELAUNCHED]: '1',
    },
  );
}

/** One API process: listens, and on SIGINT/SIGTERM stops accepting, finishes in-flight requests, closes the database. */
async function serve(config: Config, migrated: boolean, replacement = false): Promise<void> {
  const { app } = await buildApp(config, { skipMigrations: migrated, replacement });
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => process.exit(1), 10_000);
    timer.unref();
    await app.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  await app.listen({ host: config.HOST, port: config.PORT });
}

/** With WORKERS > 1 the primary migrates once, then forks that many API processes sharing the port and the database. */
async function main(): Promise<void> {
  const config = readConfig();
  // Before anything starts: cluster workers inherit the flags and the environment of the relaunched primary.
  relaunchWithMemorySettings(config);
  if (config.WORKERS <= 1) return serve(config, false);
  if (cluster.isPrimary) {
    const handle = connectDatabase(config.DATABASE_URL, {
      synchronous: config.SQLITE_SYNCHRONOUS,
      poolSize: 1,
    });
    await migrateToLatest(handle.db, handle.dialect);
    await handle.db.destroy();
    let stopping = false;
    const listening = new Set<number>();
    // Until every first worker has listened: a failure then is the start's own (bad configuration, the port taken).
    let starting = true;
    let failedStarts = 0;
    if (!config.REDIS_URL) {
      // Said once, at the start: every limit then holds per process, which an operator should know they chose.
      console.error(
        `WORKERS=${config.WORKERS} without REDIS_URL: the rate limits and the failed-login limit are counted in each process, so together they allow ${config.WORKERS} times each budget; set REDIS_URL to share them`,
      );
    }
    for (let i = 0; i < config.WORKERS; i++) cluster.fork();
    cluster.on('listening', (worker) => {
      listening.add(worker.id);
      failedStarts = 0;
      if (!starting) console.error(`worker ${worker.process.pid} listening in place of one that exited`);
      if (starting && listening.size >= config.WORKERS) {
        starting = false;
        // The end of the start, which decides how a worker's exit is taken (above): said, for operators and tests.
        console.error(`all ${config.WORKERS} workers listening`);
      }
    });
    cluster.on('exit', (worker, code) => {
      if (stopping) return;
      const listened = listening.delete(worker.id);
      if (!listened && starting) {
        // Another would fail the same way, without end: the server stops, as one process does, after the worker's
        // own message.
        console.error(`worker ${worker.process.pid} exited with ${code} before it listened; stopping`);
        process.exitCode = 1;
        stop();
        return;
      }
      // A replacement that fails to start (the database unreachable for a while, say) is tried again ever later.
      if (!listened) failedStarts++;
      const wait = listened ? 0 : Math.min(30_000, 1000 * 2 ** (failedStarts - 1));
      console.error(`worker ${worker.process.pid} exited with ${code}; starting another in ${wait / 1000} s`);
      setTimeout(() => {
        // A replacement does not run BOOTSTRAP_CLIENT again: a crash would re-enable a client an operator disabled.
        if (!stopping) cluster.fork({ [REPLACEMENT]: '1' });
      }, wait);
    });
    const stop = () => {
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  return serve(config, true, process.env[REPLACEMENT] === '1');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
