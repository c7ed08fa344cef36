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

/** One API process: listens, and on SIGINT/SIGTERM stops accepting, finishes in-flight requests, closes the database. */
async function serve(config: Config, migrated: boolean): Promise<void> {
  const { app } = await buildApp(config, { skipMigrations: migrated });
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
  if (config.WORKERS <= 1) return serve(config, false);
  if (cluster.isPrimary) {
    const handle = connectDatabase(config.DATABASE_URL, {
      synchronous: config.SQLITE_SYNCHRONOUS,
      poolSize: 1,
    });
    await migrateToLatest(handle.db, handle.dialect);
    await handle.db.destroy();
    let stopping = false;
    for (let i = 0; i < config.WORKERS; i++) cluster.fork();
    cluster.on('exit', (worker, code) => {
      if (stopping) return;
      console.error(`worker ${worker.process.pid} exited with ${code}; starting another`);
      cluster.fork();
    });
    const stop = () => {
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  return serve(config, true);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
