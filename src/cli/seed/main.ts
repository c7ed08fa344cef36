// `npm run seed -- --users N --posts N [--seed S] [--comments-per-post F] [--reactions-per-post F]
//   [--friends-per-user F] [--messages-per-user F] [--media-per-user F] [--users-per-network N] [--batch N]
//   [--bulk | --no-bulk] [--db URL]`: writes a deterministic synthetic world
// (docs/benchmarks.md, "Seeding a world"), through the bulk path unless --no-bulk asks for the API's event path.
// DATABASE_URL comes from the configuration unless --db overrides it.
import { sql } from 'kysely';
import { ConfigError, databaseUrl, loadConfig, urlWithoutCredentials } from '../../config.ts';
import type { Context } from '../../context.ts';
import { connectDatabase } from '../../db/connect.ts';
import { createPostgresDatabaseIfMissing } from '../../db/create-database.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import { EventBus } from '../../events/bus.ts';
import { modules } from '../../modules/index.ts';
import { refreshRecentIndex } from '../../modules/search/search-index.repository.ts';
import { searchTuning } from '../../modules/search/search-ranking.service.ts';
import { Progress } from './progress.ts';
import { SEED_PASSWORD, WORLD_DEFAULTS, World, type WorldOptions } from './world.ts';

const USAGE = `usage: npm run seed -- --users N --posts N [--seed S] [--comments-per-post F] [--reactions-per-post F]
       [--friends-per-user F] [--messages-per-user F] [--media-per-user F] [--users-per-network N] [--batch N]
       [--bulk | --no-bulk] [--db URL]`;

/** Parses the flags; throws with the usage on anything unknown or malformed. */
export function parseSeedArgs(argv: string[]): {
  options: Omit<WorldOptions, 'bulk'>;
  db: string | undefined;
  bulk: boolean | undefined;
} {
  const numbers: Record<string, Exclude<keyof WorldOptions, 'bulk' | 'indexAsWritten'>> = {
    '--users': 'users',
    '--posts': 'posts',
    '--seed': 'seed',
    '--comments-per-post': 'commentsPerPost',
    '--reactions-per-post': 'reactionsPerPost',
    '--friends-per-user': 'friendsPerUser',
    '--messages-per-user': 'messagesPerUser',
    '--media-per-user': 'mediaPerUser',
    '--users-per-network': 'usersPerNetwork',
    '--batch': 'batch',
  };
  const options: Omit<WorldOptions, 'bulk'> = { users: 1000, posts: 10_000, seed: 1, ...WORLD_DEFAULTS };
  let db: string | undefined;
  let bulk: boolean | undefined;
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i] as string;
    if (flag === '--bulk' || flag === '--no-bulk') {
      bulk = flag === '--bulk';
      i--;
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
    if (flag === '--db') {
      try {
        db = databaseUrl(value);
        // connectDatabase reads `sqlite:` alone as in-memory too.
        if (db === 'sqlite:' || db === 'sqlite::memory:')
          throw new Error('an in-memory database keeps nothing; give a file');
      } catch (err) {
        throw new Error(
          `bad argument --db ${urlWithoutCredentials(value)}: ${(err as Error).message}\n${USAGE}`,
        );
      }
      continue;
    }
    const key = numbers[flag];
    const n = Number(value);
    if (!key || !Number.isFinite(n) || n < 0) throw new Error(`bad argument ${flag} ${value}\n${USAGE}`);
    options[key] = n;
  }
  options.users = Math.max(1, Math.floor(options.users));
  options.posts = Math.floor(options.posts);
  options.batch = Math.max(1, Math.floor(options.batch));
  // At least one user a network: 0 would ask for endless networks.
  options.usersPerNetwork = Math.max(1, Math.floor(options.usersPerNetwork));
  return { options, db, bulk };
}

/**
 * Seeds the database at `url` (migrating it first; the CLI creates a missing PostgreSQL database before); refuses a
 * database that already has users. `bulk` defaults to true on both engines: the event path writes the same world a post at a time
 * (docs/decisions.md, thirty-first session).
 */
export async function seedDatabase(
  url: string,
  options: Omit<WorldOptions, 'bulk'> & { bulk?: boolean },
  onProgress?: (phase: string, done: number, total: number) => void,
) {
  const config = loadConfig(process.env, { DATABASE_URL: url });
  // One writer, so nothing to gain from group commit (and its second connection would keep SQLite from leaving WAL
  // mode for the load); two PostgreSQL connections for the two streams of the final index builds.
  const handle = connectDatabase(url, {
    synchronous: 'OFF',
    poolSize: 2,
    statementTimeoutMs: 600_000,
    groupCommit: false,
  });
  try {
    await migrateToLatest(handle.db, handle.dialect);
    // Before the pragmas below leave WAL mode: a database that is refused is left as the API uses it.
    const existing = await handle.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    if (Number(existing.n) > 0) {
      throw new Error(
        `the database ${urlWithoutCredentials(url)} already has ${existing.n} users; seed an empty database`,
      );
    }
    if (handle.dialect === 'sqlite') {
      // A bulk load into a new database, of no use half written: no fsync at all, and the rollback journal in
      // memory instead of the WAL (which writes every page twice, once more when checkpointing); a process or
      // machine crash mid-seed can leave the file corrupt: seed again. A 1 GiB page cache; index sorts in memory,
      // on two threads.
      await sql`PRAGMA journal_mode = MEMORY`.execute(handle.db);
      await sql`PRAGMA cache_size = -1048576`.execute(handle.db);
      await sql`PRAGMA temp_store = MEMORY`.execute(handle.db);
      await sql`PRAGMA threads = 2`.execute(handle.db);
    }
    const ctx: Context = {
      db: handle.db,
      readDb: handle.db,
      dialect: handle.dialect,
      config,
      bus: new EventBus(),
    };
    for (const m of modules) m.subscribe?.(ctx);
    const started = Date.now();
    const bulk = options.bulk ?? true;
    const counts = await new World(ctx, { ...options, bulk }).run(onProgress);
    // PostgreSQL: the index of recent documents, as `search compact` keeps it (docs/search.md).
    if (handle.dialect === 'postgres') await refreshRecentIndex(handle.db, searchTuning.recentDocs);
    // Statistics for the planners, as a finished database has them; SQLite back in the WAL mode the API uses. On
    // PostgreSQL a vacuum too, as autovacuum would do after a load (and this machine runs with it off): until the
    // visibility map is set, counts the index answers read the heap instead (the top hashtag's association count, 1.5
    // ms from the index, took 48 ms through 13,205 heap blocks). 9 s on the 1,000,000-post world.
    await sql`${sql.raw(handle.dialect === 'postgres' ? 'VACUUM (ANALYZE)' : 'ANALYZE')}`.execute(handle.db);
    if (handle.dialect === 'sqlite') await sql`PRAGMA journal_mode = WAL`.execute(handle.db);
    return { counts, bulk, seconds: (Date.now() - started) / 1000 };
  } finally {
    await handle.db.destroy();
  }
}

async function main(): Promise<number> {
  const { options, db, bulk } = parseSeedArgs(process.argv.slice(2));
  const url = db ?? loadConfig().DATABASE_URL;
  const created = await createPostgresDatabaseIfMissing(url);
  if (created) console.error(`created the database ${created}`);
  console.error(`seeding ${urlWithoutCredentials(url)}: ${JSON.stringify(options)}`);
  const bars = new Map<string, { bar: Progress; done: number }>();
  const { counts, seconds, ...rest } = await seedDatabase(url, { ...options, bulk }, (phase, done, total) => {
    const entry = bars.get(phase) ?? { bar: new Progress(phase, total), done: 0 };
    bars.set(phase, entry);
    if (done === 0) return;
    if (done >= total) entry.bar.finish();
    else entry.bar.tick(done - entry.done);
    entry.done = done;
  });
  console.log(JSON.stringify({ ...counts, bulk: rest.bulk, seconds, password: SEED_PASSWORD }));
  return 0;
}

if (import.meta.main) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err instanceof ConfigError || err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
