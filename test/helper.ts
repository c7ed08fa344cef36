import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import {
  CompiledQuery,
  createQueryId,
  type Insertable,
  type Kysely,
  type RootOperationNode,
  sql,
} from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { apiConnectOptions, buildApp } from '../src/app.ts';
import { checkCommand } from '../src/cli/commands/check.command.ts';
import { type Config, loadConfig } from '../src/config.ts';
import type { Context } from '../src/context.ts';
import { closeDatabase, connectDatabase, type DbHandle } from '../src/db/connect.ts';
import type { Database } from '../src/db/database.ts';
import { migrateToLatest, migrationsFor } from '../src/db/migrate.ts';
import { nowIso, uuidv7 } from '../src/db/time.ts';
import { issueTokens, saveClient } from '../src/modules/auth/auth.service.ts';
import { hashPassword } from '../src/modules/auth/password.ts';
import { insertUser } from '../src/modules/user/user.repository.ts';

/** A count of node-postgres's queries, one a round trip (countPgRoundTrips). */
export interface PgRoundTrips {
  /** Queries sent since the count started or was last reset. */
  readonly count: number;
  reset(): void;
  /** Puts node-postgres's own query back. */
  restore(): void;
}

/**
 * Counts the queries every node-postgres client sends until `restore()`: one call is one round trip. Start it
 * before the pool connects; a client keeps the query it had when it connected.
 */
export function countPgRoundTrips(): PgRoundTrips {
  const original = pg.Client.prototype.query;
  let count = 0;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    count++;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return {
    get count() {
      return count;
    },
    reset() {
      count = 0;
    },
    restore() {
      pg.Client.prototype.query = original;
    },
  };
}

/** A database engine the suite runs against. */
export interface TestDialect {
  name: 'sqlite' | 'postgres';
  /** Creates a fresh, empty database and returns its URL and a function that drops it. */
  create(): Promise<{ url: string; drop: () => Promise<void> }>;
}

const sqlite: TestDialect = {
  name: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'social-test-'));
    return {
      url: `sqlite:${join(dir, 'test.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

function postgres(adminUrl: string): TestDialect {
  return {
    name: 'postgres',
    async create() {
      const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return {
        url: url.toString(),
        drop: async () => {
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          await c.end();
        },
      };
    },
  };
}

let warned = false;

/** The engines to run every storage test on: SQLite always, PostgreSQL when TEST_PG_URL is set. */
export function testDialects(): TestDialect[] {
  const url = process.env.TEST_PG_URL;
  if (!url) {
    if (!warned) {
      warned = true;
      console.warn('# PostgreSQL suite SKIPPED: TEST_PG_URL is not set (CI sets it).');
    }
    return [sqlite];
  }
  return [sqlite, postgres(url)];
}

/** A user created for a test, with a logged-in access token. */
export interface TestUser {
  uuid: string;
  username: string;
  email: string;
  password: string;
  token: string;
}

/** An app built on a fresh database, with helpers to call it. */
export interface TestApp {
  app: FastifyInstance;
  ctx: Context;
  dialect: 'sqlite' | 'postgres';
  url: string;
  client: { id: string; secret: string };
  /** A guest token of the test client. */
  guest: string;
  inject(opts: InjectOptions & { token?: string }): Promise<LightMyRequestResponse>;
  /** Creates a user directly in the database and logs it in. */
  createUser(name?: string, role?: string): Promise<TestUser>;
  /** SQLite: how many groups the write connection has committed (undefined on PostgreSQL). */
  sqliteCommits(): number | undefined;
  close(): Promise<void>;
}

let counter = 0;

/** Injects a request, turning `token` into an `Authorization: Bearer` header. */
export function injectWithToken(
  app: FastifyInstance,
  opts: InjectOptions & { token?: string },
): Promise<LightMyRequestResponse> {
  const { token, ...rest } = opts;
  const headers = { ...(rest.headers ?? {}) } as Record<string, string>;
  if (token) headers.authorization = `Bearer ${token}`;
  return app.inject({ ...rest, headers });
}

/** Creates a user directly in the database (password `pw-NAME-secret`) and issues it a user token of the client. */
export async function insertTestUser(
  ctx: Context,
  clientId: string,
  username: string,
  role = 'user',
): Promise<TestUser> {
  const password = `pw-${username}-secret`;
  const uuid = uuidv7();
  const now = nowIso();
  const email = `${username}@example.test`;
  await insertUser(ctx.db, {
    uuid,
    username,
    username_key: username.toLowerCase(),
    email,
    email_key: email.toLowerCase(),
    password_hash: await hashPassword(password),
    display_name: null,
    bio: null,
    language: 'en',
    network_uuid: null,
    role,
    karma: 0,
    created_at: now,
    updated_at: now,
  });
  const token = (await issueTokens(ctx, ctx.db, clientId, uuid)).access_token;
  return { uuid, username, email, password, token };
}

/** Builds the app on a fresh database of the dialect. */
export async function startTestApp(dialect: TestDialect, overrides: Partial<Config> = {}): Promise<TestApp> {
  const { url, drop } = await dialect.create();
  const config = loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'silent', ...overrides });
  const handle = connectDatabase(url, { ...apiConnectOptions(config), synchronous: 'NORMAL', poolSize: 5 });
  const client = { id: 'test-client', secret: 'test-client-secret' };
  let built: Awaited<ReturnType<typeof buildApp>>;
  let guest: string;
  try {
    await migrateToLatest(handle.db, handle.dialect);
    built = await buildApp(config, { handle, skipMigrations: true, logger: false });
    await built.app.ready();
    await saveClient(built.ctx.db, { ...client, name: 'Test client', firstParty: true });
    guest = (await issueTokens(built.ctx, built.ctx.db, client.id, null)).access_token;
  } catch (err) {
    // The API's pool keeps idle connections for good: left open, they would hold the test file after a failed start.
    await closeDatabase(handle).catch(() => {});
    await drop();
    throw err;
  }
  const { app, ctx } = built;

  const t: TestApp = {
    app,
    ctx,
    dialect: dialect.name,
    url,
    client,
    guest,
    inject: (opts) => injectWithToken(app, opts),
    sqliteCommits: () => handle.groupCommitStats?.()?.commits,
    createUser(name, role = 'user') {
      return insertTestUser(
        ctx,
        client.id,
        name ?? `user${++counter}_${randomBytes(3).toString('hex')}`,
        role,
      );
    },
    async close() {
      await app.close();
      await closeDatabase(handle);
      await drop();
    },
  };
  return t;
}

/** The parsed JSON body of a response. */
// biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
export function body(res: LightMyRequestResponse): any {
  return JSON.parse(res.body);
}

/** How many rows a table holds, for tests that check what a refused request did not store. */
export async function countRows(db: Kysely<Database>, table: keyof Database & string): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * A users row for bulk inserts (insertInBatches): a lowercase `username` without a usable password, English, created
 * `now`; `fields` sets the rest (a display name, say). Such users sign in nowhere; they fill the world a test needs.
 */
export function bulkUserRow(
  username: string,
  now: string,
  fields: Partial<Insertable<Database['users']>> = {},
): Insertable<Database['users']> {
  const email = `${username}@example.test`;
  return {
    uuid: uuidv7(),
    username,
    username_key: username,
    email,
    email_key: email,
    password_hash: 'x',
    language: 'en',
    role: 'user',
    karma: 0,
    created_at: now,
    updated_at: now,
    ...fields,
  };
}

/** Inserts rows 500 to a statement (the engines bound the parameters of one statement). */
export async function insertInBatches<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  rows: Insertable<Database[T]>[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto(table)
      .values(rows.slice(i, i + 500) as never)
      .execute();
  }
}

/** Watches the event loop from now on with a 5 ms timer; `stop()` ends it and gives the longest delay seen, in ms. */
export function watchEventLoopStalls(): { stop: () => number } {
  let maxDrift = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    maxDrift = Math.max(maxDrift, now - last - 5);
    last = now;
  }, 5);
  return {
    stop: () => {
      clearInterval(timer);
      return maxDrift;
    },
  };
}

/** The database `db` through a plugin that keeps every query it runs (`nodes`), to be compiled and explained later. */
export function recordingQueries(db: Kysely<Database>): { db: Kysely<Database>; nodes: RootOperationNode[] } {
  const nodes: RootOperationNode[] = [];
  const recording = db.withPlugin({
    transformQuery: (args) => {
      nodes.push(args.node);
      return args.node;
    },
    transformResult: async (args) => args.result,
  });
  return { db: recording, nodes };
}

/**
 * PostgreSQL: the generic plan of each recorded query, as a prepared statement holds it after five runs
 * (`plan_cache_mode = force_generic_plan`), explained with the recorded values. `seqscan: false` asks as for a big
 * table: the test worlds fit a few pages, where a sequential scan wins whatever the plan could use.
 */
export async function genericPlans(
  db: Kysely<Database>,
  nodes: RootOperationNode[],
  options: { seqscan?: boolean } = {},
): Promise<{ sql: string; plan: string }[]> {
  const text = (v: unknown) => `'${String(v).replaceAll("'", "''")}'`;
  const literal = (v: unknown) =>
    typeof v === 'number' ? String(v) : Array.isArray(v) ? `array[${v.map(text).join(', ')}]` : text(v);
  const plans: { sql: string; plan: string }[] = [];
  await db.connection().execute(async (c) => {
    await sql`set plan_cache_mode = force_generic_plan`.execute(c);
    if (options.seqscan === false) await sql`set enable_seqscan = off`.execute(c);
    for (const [i, node] of nodes.entries()) {
      const compiled = c.getExecutor().compileQuery(node, createQueryId());
      await sql.raw(`prepare generic_plan_${i} as ${compiled.sql}`).execute(c);
      const args = compiled.parameters.map(literal).join(', ');
      const explained = await sql<{ 'QUERY PLAN': string }>`${sql.raw(
        `explain execute generic_plan_${i}(${args})`,
      )}`.execute(c);
      plans.push({ sql: compiled.sql, plan: explained.rows.map((r) => r['QUERY PLAN']).join('\n') });
    }
    await sql`deallocate all`.execute(c);
    await sql`reset enable_seqscan`.execute(c);
    await sql`reset plan_cache_mode`.execute(c);
  });
  return plans;
}

/**
 * PostgreSQL plans (`explain`) of the recorded queries whose SQL `keep` accepts, asked as for a big table: the test
 * worlds fit a few pages, where a sequential scan wins.
 */
export async function explainRecorded(
  db: Kysely<Database>,
  nodes: RootOperationNode[],
  keep: (sql: string) => boolean,
): Promise<string[]> {
  const plans: string[] = [];
  await db.connection().execute(async (c) => {
    await sql`set enable_seqscan = off`.execute(c);
    for (const node of nodes) {
      const compiled = c.getExecutor().compileQuery(node, createQueryId());
      if (!keep(compiled.sql)) continue;
      const r = await c.executeQuery<{ 'QUERY PLAN': string }>(
        CompiledQuery.raw(`explain ${compiled.sql}`, [...compiled.parameters]),
      );
      plans.push(r.rows.map((row) => row['QUERY PLAN']).join('\n'));
    }
    await sql`reset enable_seqscan`.execute(c);
  });
  return plans;
}

/**
 * Inserts `count` users straight into the database, one in `every` (the last of each run of `every`) named `Annabel
 * <i>` and the others `Zed <i>`, but those at `exactAt`, named `Ann`; returns the matching users' uuids oldest first
 * and those of the users at `exactAt`, in that order.
 */
export async function insertAnnabels(
  db: Kysely<Database>,
  count: number,
  every: number,
  exactAt: number[],
): Promise<{ matching: string[]; exact: string[] }> {
  const now = nowIso();
  const matching: string[] = [];
  const rows = Array.from({ length: count }, (_, i) => {
    const match = i % every === every - 1;
    const name = exactAt.includes(i) ? 'Ann' : match ? `Annabel ${i}` : `Zed ${i}`;
    const row = bulkUserRow(`member${i}`, now, { display_name: name });
    if (match) matching.push(row.uuid as string);
    return row;
  });
  await insertInBatches(db, 'users', rows);
  return { matching, exact: exactAt.map((i) => rows[i]?.uuid as string) };
}

/**
 * A new SQLite database file migrated up to `migration` and no further (writes indexed at once, no group commit), to
 * test what a later migration does with the rows a database already holds; `close` destroys it.
 */
export async function sqliteMigratedTo(
  migration: string,
): Promise<{ handle: DbHandle; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'migrated-'));
  const handle = connectDatabase(`sqlite:${join(dir, 'db.sqlite')}`, { groupCommit: false });
  const migrator = new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => migrationsFor('sqlite') },
  });
  const { error } = await migrator.migrateTo(migration);
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return {
    handle,
    async close() {
      await handle.db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs the CLI's `check` on a test app's context, returning its exit code and what it printed. */
export async function runCheckCommand(ctx: Context): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (...args: unknown[]) => lines.push(args.join(' '));
  try {
    return { code: await checkCommand.run(ctx, []), out: lines.join('\n') };
  } finally {
    console.log = log;
  }
}
