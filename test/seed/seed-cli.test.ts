// `npm run seed` as a user types it: without --bulk it takes the bulk path on both engines (the event path would take
// half an hour for the 1,000,000-post world on SQLite), and what it writes passes `npm run cli -- check`.
// `--no-bulk` still asks for the API's event path.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { parseSeedArgs } from '../../src/cli/seed/main.ts';
import { argsWithoutCredentials, urlWithoutCredentials } from '../../src/config.ts';
import { testDialects } from '../helper.ts';

/** Runs a CLI entry point with Node 24 (the tests' own) from the project's root; returns its standard output. */
function runCli(script: string, args: string[], env: Record<string, string> = {}): string {
  const r = spawnSync(process.execPath, [script, ...args], {
    cwd: join(import.meta.dirname, '..', '..'),
    encoding: 'utf8',
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    timeout: 120_000,
  });
  // Both streams in the message: `check` says what failed on its standard output.
  assert.equal(r.status, 0, `${script} ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The summary line `npm run seed` prints last. */
function seedSummary(out: string): { bulk: boolean; users: number; posts: number } {
  return JSON.parse(out.trim().split('\n').pop() as string);
}

for (const dialect of testDialects()) {
  describe(`npm run seed [${dialect.name}]`, () => {
    it('takes the bulk path unless told otherwise, and leaves a database that passes check', async () => {
      const { url, drop } = await dialect.create();
      try {
        const summary = seedSummary(
          runCli('src/cli/seed/main.ts', ['--users', '40', '--posts', '300', '--db', url]),
        );
        assert.equal(summary.bulk, true);
        assert.equal(summary.posts, 300);
        // 40 users and bench_user.
        assert.equal(summary.users, 41);
        const check = runCli('src/cli/main.ts', ['check'], { DATABASE_URL: url });
        assert.match(check, /^check OK: 41 users/m);
      } finally {
        await drop();
      }
    });
  });
}

const postgres = testDialects().find((d) => d.name === 'postgres');

describe('npm run seed into a PostgreSQL database that does not exist [postgres]', {
  skip: !postgres,
}, () => {
  it('creates it, says so, and seeds it', async () => {
    const { url: adminUrl, drop } = await (postgres as NonNullable<typeof postgres>).create();
    // A name that needs quoting (upper case and a hyphen), on a server where it does not exist.
    const name = `${new URL(adminUrl).pathname.slice(1)}-New`;
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      const r = spawnSync(
        process.execPath,
        ['src/cli/seed/main.ts', '--users', '10', '--posts', '40', '--db', url.toString()],
        {
          cwd: join(import.meta.dirname, '..', '..'),
          encoding: 'utf8',
          env: { ...process.env, LOG_LEVEL: 'silent' },
          timeout: 120_000,
        },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`^created the database ${name}$`, 'm'));
      assert.equal(seedSummary(r.stdout).posts, 40);
      const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      assert.equal(found.rowCount, 1);
      const check = runCli('src/cli/main.ts', ['check'], { DATABASE_URL: url.toString() });
      assert.match(check, /^check OK: 11 users/m);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
      await drop();
    }
  });
});

describe('npm run seed --no-bulk [sqlite]', () => {
  it('writes through the API event path when asked', async () => {
    const sqlite = testDialects().find((d) => d.name === 'sqlite');
    const { url, drop } = await (sqlite as NonNullable<typeof sqlite>).create();
    try {
      const out = runCli('src/cli/seed/main.ts', [
        '--users',
        '20',
        '--posts',
        '60',
        '--no-bulk',
        '--db',
        url,
      ]);
      assert.equal(seedSummary(out).bulk, false);
      assert.equal(seedSummary(out).posts, 60);
    } finally {
      await drop();
    }
  });
});

describe('npm run seed: arguments refused before anything is written', () => {
  it('a --db that names no engine, and the password never printed', () => {
    for (const [db, shown] of [
      ['./data/x.db', './data/x.db'],
      ['mysql://root:hunter2@localhost/db', 'mysql://localhost/db'],
      // A raw @ in the password, and a password given as a query parameter, are hidden too.
      ['mysql://root:hun@ter2@localhost/db', 'mysql://localhost/db'],
      ['mysql://localhost/db?user=root&password=hunter2', 'mysql://localhost/db?user=***&password=***'],
    ] as const) {
      const r = spawnSync(
        process.execPath,
        ['src/cli/seed/main.ts', '--users', '2', '--posts', '2', '--db', db],
        {
          cwd: join(import.meta.dirname, '..', '..'),
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      assert.equal(r.status, 1, r.stderr);
      assert.ok(r.stderr.includes(`bad argument --db ${shown}: must start with sqlite:`), r.stderr);
      assert.doesNotMatch(r.stderr, /hunter2/);
    }
  });

  it('an in-memory database, which would keep nothing, is refused', () => {
    for (const db of ['sqlite:', 'sqlite::memory:']) {
      assert.throws(() => parseSeedArgs(['--db', db]), /in-memory database keeps nothing/);
    }
  });

  it('a command line shown in the benchmark report has no password and pastes back into a shell', () => {
    assert.equal(
      argsWithoutCredentials(['--db', 'postgres://u:pa@ss@h:5432/x?sslpassword=k', '--workers', '1']),
      "--db 'postgres://u:***@h:5432/x?sslpassword=***' --workers 1",
    );
    assert.equal(
      argsWithoutCredentials([
        '--db',
        'postgres://postgres@127.0.0.1:5432/seed_1m',
        '--only',
        "^GET /tags$|it's",
      ]),
      `--db postgres://postgres@127.0.0.1:5432/seed_1m --only '^GET /tags$|it'\\''s'`,
    );
    assert.equal(argsWithoutCredentials(['', '!x', '$HOME', 'a b']), `'' '!x' '$HOME' 'a b'`);
    // An `@` in a secret query parameter is not the end of a user and password: the host stays, nothing leaks.
    assert.equal(
      argsWithoutCredentials(['postgres://h:5432/db?password=p@ss', 'postgres://u:p@h/db?sslpassword=k@y']),
      `'postgres://h:5432/db?password=***' 'postgres://u:***@h/db?sslpassword=***'`,
    );
    assert.equal(
      urlWithoutCredentials('postgres://h:5432/db?password=p@ss'),
      'postgres://h:5432/db?password=***',
    );
  });

  it('--users-per-network 0 is taken as 1, not as endless networks', () => {
    assert.equal(parseSeedArgs(['--users-per-network', '0']).options.usersPerNetwork, 1);
  });
});
