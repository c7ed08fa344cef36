// `npm run demo [-- --db PATH --users N --posts N --seed S]`: recreates an embedded database (./data/demo.db) with a
// small believable world, starts the API on it (HOST/PORT as usual), and prints a token of a demo user and three
// example requests. The world comes from the seed generator (src/cli/seed), with its progress bars.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { buildApp } from '../app.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { issueTokens } from '../modules/auth/auth.service.ts';
import { findUserByLogin } from '../modules/user/user.repository.ts';
import { seedDatabase } from './seed/main.ts';
import { Progress } from './seed/progress.ts';
import { BENCH_USERNAME, SEED_PASSWORD, WORLD_DEFAULTS, type WorldOptions } from './seed/world.ts';

/** The demo world: about 200 users, 2,000 posts with comments, reactions, friendships, networks and messages. */
export const DEMO_WORLD: WorldOptions = {
  ...WORLD_DEFAULTS,
  users: 200,
  posts: 2000,
  seed: 42,
  commentsPerPost: 0.6,
  reactionsPerPost: 1.5,
  friendsPerUser: 4,
  messagesPerUser: 2,
  mediaPerUser: 0.1,
  usersPerNetwork: 25,
  batch: 250,
  vocabularySize: 3000,
  // Through the API's repositories and domain events: karma, tags and the search index are the real ones.
  bulk: false,
};

const USAGE = 'usage: npm run demo [-- --db PATH --users N --posts N --seed S]';

/** Parses the flags of the demo command. */
export function parseDemoArgs(argv: string[]): { db: string; world: WorldOptions } {
  const world = { ...DEMO_WORLD };
  let db = './data/demo.db';
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
    if (flag === '--db') {
      db = value;
      continue;
    }
    const key = ({ '--users': 'users', '--posts': 'posts', '--seed': 'seed' } as const)[flag as '--users'];
    const n = Number(value);
    if (!key || !Number.isInteger(n) || n < 1) throw new Error(`bad argument ${flag} ${value}\n${USAGE}`);
    world[key] = n;
  }
  return { db, world };
}

/** Removes the database file, its WAL companions and the demo's media folder, so every run starts fresh. */
function removeDemoFiles(db: string, mediaDir: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${db}${suffix}`, { force: true });
  rmSync(mediaDir, { recursive: true, force: true });
}

/** Whether two paths name one file: the same resolved path, or (both existing) the same device and inode, so a
 * symlink or a case-insensitive file system cannot disguise the API's database. */
function sameFile(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const { db, world } = parseDemoArgs(process.argv.slice(2));
  const api = loadConfig().DATABASE_URL;
  // The demo deletes its file first: never the API's own database.
  if (api.startsWith('sqlite:') && sameFile(api.slice('sqlite:'.length), db)) {
    throw new Error(
      `--db ${db} is the API's own database (DATABASE_URL), which the demo would delete; give the demo another file`,
    );
  }
  const url = `sqlite:${db}`;
  const mediaDir = join(dirname(db), 'demo-media');
  removeDemoFiles(db, mediaDir);
  mkdirSync(dirname(db), { recursive: true });

  console.error(`Building a demo world in ${db}: ${world.users} users, ${world.posts} posts ...`);
  const bars = new Map<string, { bar: Progress; done: number }>();
  const { counts, seconds } = await seedDatabase(url, world, (phase, done, total) => {
    const entry = bars.get(phase) ?? { bar: new Progress(phase, total), done: 0 };
    bars.set(phase, entry);
    if (done === 0) return;
    if (done >= total) entry.bar.finish();
    else entry.bar.tick(done - entry.done);
    entry.done = done;
  });

  // A client of its own (not the development client): ./data/dev-client.json belongs to the main database.
  const client = { id: 'demo-client', secret: randomBytes(18).toString('base64url') };
  const config = loadConfig(process.env, {
    DATABASE_URL: url,
    MEDIA_DIR: mediaDir,
    BOOTSTRAP_CLIENT: client,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  });
  const { app, ctx } = await buildApp(config);
  const user = await findUserByLogin(ctx.db, BENCH_USERNAME);
  if (!user) throw new Error(`the demo world has no user ${BENCH_USERNAME}`);
  const token = (await issueTokens(ctx, ctx.db, client.id, user.uuid)).access_token;

  // The examples use real names of this world: its busiest hashtag and a word of the demo user's feed.
  const topTag = await app.inject({
    method: 'GET',
    url: '/tags?filterby[tag_type][eq]=hashtag&sortby[associations_count]=desc&limit=1',
    headers: { authorization: `Bearer ${token}` },
  });
  const hashtag: string = topTag.json().data?.[0]?.name ?? 'travel';

  const shutdown = async () => {
    await app.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  await app.listen({ host: config.HOST, port: config.PORT }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EADDRINUSE') throw err;
    throw new Error(
      `Port ${config.PORT} is in use (is npm start running?). Choose another: PORT=3001 npm run demo`,
    );
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const base = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;

  console.log(
    [
      '',
      `Demo world ready in ${seconds.toFixed(1)} s: ${counts.users} users, ${counts.connections} friendships, ${counts.networks} networks, ${counts.posts} posts, ${counts.comments} comments, ${counts.reactions} reactions, ${counts.messages} messages.`,
      `The API runs at ${base} (reference: ${base}/docs). Stop it with Ctrl-C; the next run starts a fresh world.`,
      '',
      `You are @${BENCH_USERNAME}, a demo user with friends. Every demo user's password is ${SEED_PASSWORD};`,
      `the demo client is ${client.id}:${client.secret} (password grant allowed).`,
      '',
      `TOKEN=${token}`,
      '',
      'Try:',
      `  curl -s -G -H "Authorization: Bearer $TOKEN" --data-urlencode 'query=${hashtag}' ${base}/search`,
      `  curl -s -G -H "Authorization: Bearer $TOKEN" --data-urlencode 'filterby[name][like]=${hashtag.slice(0, 3)}%' ${base}/tags`,
      `  curl -s -G -H "Authorization: Bearer $TOKEN" --data-urlencode 'sortby[points]=desc' ${base}/karma`,
      '',
    ].join('\n'),
  );
}

if (import.meta.main) {
  main().catch((err) => {
    console.error(err instanceof ConfigError || err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
