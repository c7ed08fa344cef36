import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { type Kysely, sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { Context } from '../../src/context.ts';
import { connectDatabase, type DbHandle } from '../../src/db/connect.ts';
import type { Database } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { PgGroupCommitOptions } from '../../src/db/pg-group-commit.ts';
import { issueTokens, saveClient } from '../../src/modules/auth/auth.service.ts';
import { injectWithToken, insertTestUser, type TestDialect, type TestUser } from '../helper.ts';

/** An app on a fresh database whose error log lines are kept (so a 500 comes with its stack). */
export interface LoggedApp {
  app: FastifyInstance;
  ctx: Context;
  handle: DbHandle;
  dialect: 'sqlite' | 'postgres';
  url: string;
  client: { id: string; secret: string };
  guest: string;
  /** Log lines at level error or above (or the level asked for), parsed. */
  errors: Record<string, unknown>[];
  inject(opts: InjectOptions & { token?: string }): Promise<LightMyRequestResponse>;
  createUser(name?: string, role?: string): Promise<TestUser>;
  close(): Promise<void>;
}

let counter = 0;

/** Settings that let a test send thousands of requests per token (limits are tested elsewhere). */
export const UNLIMITED: Partial<Config> = {
  RATE_LIMIT_PER_MINUTE: 1_000_000,
  REGISTRATIONS_PER_MINUTE: 1_000_000,
  PASSWORD_CHANGES_PER_MINUTE: 1_000_000,
  LOGIN_FAILURES_PER_MINUTE: 100_000,
};

/** Builds the app on a fresh database of the dialect (or on `url` when given), logging errors into `errors`. */
export async function startLoggedApp(
  dialect: TestDialect,
  overrides: Partial<Config> = {},
  options: {
    url?: string;
    drop?: () => Promise<void>;
    statementTimeoutMs?: number;
    logLevel?: string;
    /** PostgreSQL: group commit options other than the API's defaults. */
    pgGroupCommit?: Partial<PgGroupCommitOptions>;
  } = {},
): Promise<LoggedApp> {
  const created = options.url
    ? { url: options.url, drop: options.drop ?? (async () => {}) }
    : await dialect.create();
  const { url, drop } = created;
  const config = loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'error', ...overrides });
  const handle = connectDatabase(url, {
    synchronous: 'NORMAL',
    poolSize: 5,
    // As the API opens PostgreSQL (apiConnectOptions): transactions grouped.
    pgGroupCommit: options.pgGroupCommit ?? true,
    ...(options.statementTimeoutMs ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
  });
  await migrateToLatest(handle.db, handle.dialect);
  const errors: Record<string, unknown>[] = [];
  const stream = {
    write(line: string) {
      try {
        errors.push(JSON.parse(line));
      } catch {
        errors.push({ msg: line });
      }
    },
  };
  const { app, ctx } = await buildApp(config, {
    handle,
    skipMigrations: true,
    logger: { level: options.logLevel ?? 'error', stream },
  });
  await app.ready();
  const client = { id: `rel-${randomBytes(3).toString('hex')}`, secret: 'reliability-secret' };
  await saveClient(ctx.db, { ...client, name: 'Reliability client', firstParty: true });
  const guest = (await issueTokens(ctx, ctx.db, client.id, null)).access_token;
  return {
    app,
    ctx,
    handle,
    dialect: dialect.name,
    url,
    client,
    guest,
    errors,
    inject: (opts) => injectWithToken(app, opts),
    createUser(name, role = 'user') {
      return insertTestUser(
        ctx,
        client.id,
        name ?? `rel${++counter}_${randomBytes(3).toString('hex')}`,
        role,
      );
    },
    async close() {
      await app.close();
      await handle.db.destroy();
      await drop();
    },
  };
}

/** A description of the database schema (tables, columns, indexes, triggers) to compare before and after. */
export async function schemaSnapshot(db: Kysely<Database>, dialect: 'sqlite' | 'postgres'): Promise<string> {
  if (dialect === 'sqlite') {
    const r = await sql<{
      type: string;
      name: string;
      sql: string | null;
    }>`SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`.execute(
      db,
    );
    return JSON.stringify(r.rows);
  }
  const cols = await sql`SELECT table_name, column_name, data_type, is_nullable, column_default
    FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, column_name`.execute(
    db,
  );
  const idx = await sql`SELECT tablename, indexname, indexdef FROM pg_indexes
    WHERE schemaname = current_schema() ORDER BY tablename, indexname`.execute(db);
  const trg = await sql`SELECT event_object_table, trigger_name, event_manipulation, action_statement
    FROM information_schema.triggers WHERE trigger_schema = current_schema()
    ORDER BY event_object_table, trigger_name, event_manipulation`.execute(db);
  const fns =
    await sql`SELECT p.proname, md5(p.prosrc) AS src FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = current_schema() ORDER BY p.proname`.execute(db);
  return JSON.stringify([cols.rows, idx.rows, trg.rows, fns.rows]);
}

/** Row counts of every table, to show what a run wrote. */
export async function tableNames(db: Kysely<Database>, dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  const r =
    dialect === 'sqlite'
      ? await sql<{
          name: string;
        }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`.execute(
          db,
        )
      : await sql<{
          name: string;
        }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(
          db,
        );
  return r.rows.map((x) => x.name);
}
