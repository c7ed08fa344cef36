import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

function guestToken(t: TestApp, id: string, secret: string) {
  return t.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { authorization: basic(id, secret) },
    payload: { grant_type: 'client_credentials' },
  });
}

describe('first start of an empty embedded database', () => {
  it('creates a first-party development client, prints it once, writes dev-client.json (0600)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'social-boot-'));
    const url = `sqlite:${join(dir, 'social.db')}`;
    const printed: string[] = [];
    const original = console.log;
    console.log = (...args: unknown[]) => printed.push(args.join(' '));
    try {
      const { app } = await buildApp(loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'info' }), {
        logger: false,
      });
      await app.close();
      const again = await buildApp(loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'info' }), {
        logger: false,
      });
      await again.app.close();
    } finally {
      console.log = original;
    }
    const file = join(dir, 'dev-client.json');
    const creds = JSON.parse(readFileSync(file, 'utf8'));
    assert.match(creds.client_id, /^dev-/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const text = printed.join('\n');
    assert.equal(text.split(creds.client_secret).length - 1, 2, 'secret printed once (and in the curl line)');
    assert.match(text, /curl .*grant_type=client_credentials/);
    rmSync(dir, { recursive: true, force: true });
  });
});

for (const dialect of testDialects()) {
  describe(`Clients at start and from the CLI [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { BOOTSTRAP_CLIENT: { id: 'boot-client', secret: 'boot-secret-1' } });
    });
    after(async () => t?.close());

    it('BOOTSTRAP_CLIENT creates a first-party client and no development client', async () => {
      const rows = await t.ctx.db.selectFrom('clients').selectAll().execute();
      assert.deepEqual(rows.map((r) => r.id).sort(), ['boot-client', 'test-client']);
      assert.equal(rows.find((r) => r.id === 'boot-client')?.first_party, 1);
      const res = await guestToken(t, 'boot-client', 'boot-secret-1');
      assert.equal(res.statusCode, 200);
      const user = await t.createUser('boot_user');
      const login = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { authorization: basic('boot-client', 'boot-secret-1') },
        payload: { grant_type: 'password', username: user.username, password: user.password },
      });
      assert.equal(login.statusCode, 200);
    });

    it('BOOTSTRAP_CLIENT updates the secret of an existing client at the next start', async () => {
      const { app } = await buildApp(
        loadConfig(
          {},
          {
            DATABASE_URL: t.url,
            LOG_LEVEL: 'silent',
            BOOTSTRAP_CLIENT: { id: 'boot-client', secret: 'boot-secret-2' },
          },
        ),
        { logger: false, skipMigrations: true },
      );
      await app.close();
      assert.equal((await guestToken(t, 'boot-client', 'boot-secret-1')).statusCode, 401);
      assert.equal((await guestToken(t, 'boot-client', 'boot-secret-2')).statusCode, 200);
    });

    it('without BOOTSTRAP_CLIENT, only an empty SQLite database gets a development client', async () => {
      const fresh = await startTestApp(dialect);
      try {
        const ids = (await fresh.ctx.db.selectFrom('clients').select('id').execute()).map((r) => r.id);
        if (dialect.name === 'sqlite') {
          assert.equal(ids.filter((id) => id.startsWith('dev-')).length, 1);
          const path = fresh.url.slice('sqlite:'.length);
          const creds = JSON.parse(readFileSync(join(dirname(path), 'dev-client.json'), 'utf8'));
          assert.equal((await guestToken(fresh, creds.client_id, creds.client_secret)).statusCode, 200);
        } else {
          assert.deepEqual(ids, ['test-client']);
        }
      } finally {
        await fresh.close();
      }
    });

    it('CLI: clients create/list/disable and users role', async () => {
      const cli = (...args: string[]) =>
        execFileSync(process.execPath, ['src/cli/main.ts', ...args], {
          env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'silent' },
          encoding: 'utf8',
        });
      const out = cli('clients', 'create', '--name', 'Mobile app', '--first-party');
      const id = /client_id:\s+(\S+)/.exec(out)?.[1] as string;
      const secret = /client_secret:\s+(\S+)/.exec(out)?.[1] as string;
      assert.ok(id && secret, out);
      const res = await guestToken(t, id, secret);
      assert.equal(res.statusCode, 200);
      const guest = body(res).access_token;
      const list = cli('clients', 'list');
      assert.match(list, new RegExp(`${id}\\tMobile app\\tfirst-party, active`));
      assert.ok(!list.includes(secret), 'list never shows secrets');
      cli('clients', 'disable', id);
      assert.match(cli('clients', 'list'), new RegExp(`${id}\\tMobile app\\tfirst-party, DISABLED`));
      assert.equal((await guestToken(t, id, secret)).statusCode, 401);
      const me = await t.inject({
        method: 'GET',
        url: '/users/01890000-0000-7000-8000-000000000000',
        token: guest,
      });
      assert.equal(body(me).error.code, 'invalid_client');

      const user = await t.createUser('cli_admin');
      assert.match(cli('users', 'role', user.username, 'admin'), /is now admin/);
      const info = await t.inject({ method: 'GET', url: '/me', token: user.token });
      assert.equal(body(info).data.role, 'admin');
      assert.throws(() => cli('users', 'role', 'no_such_user', 'admin'));
      assert.throws(() => cli('users', 'role', user.username, 'superuser'));
    });
  });
}
