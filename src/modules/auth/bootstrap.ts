import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../context.ts';
import { nowIso } from '../../db/time.ts';
import * as repo from './auth.repository.ts';
import { hashClientSecret, saveClient } from './auth.service.ts';

/** Where the development client's credentials are written: next to the embedded database file (./data by default). */
export function devClientFile(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('sqlite:')) return undefined;
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === '' || path === ':memory:') return undefined;
  return join(dirname(path), 'dev-client.json');
}

/**
 * At start: BOOTSTRAP_CLIENT=id:secret creates or updates that first-party client. Without it, the first start of an
 * empty embedded database creates a first-party development client, prints its credentials once and writes them to
 * dev-client.json (mode 0600) next to the database. A worker replacing a crashed one (`start.replacement`) does
 * neither: the first workers did, and saving again would re-enable a client disabled since.
 */
export async function startAuth(
  ctx: Context,
  log: FastifyBaseLogger,
  start: { replacement: boolean },
): Promise<void> {
  const boot = ctx.config.BOOTSTRAP_CLIENT;
  if (boot) {
    // Saving re-enables the client: a worker replacing a crashed one would undo an operator's disable unasked.
    if (start.replacement) return;
    await saveClient(ctx.db, {
      id: boot.id,
      secret: boot.secret,
      name: 'Bootstrap client',
      firstParty: true,
    });
    log.info({ client_id: boot.id }, 'bootstrap client created or updated');
    return;
  }
  if (ctx.dialect !== 'sqlite') return;
  const id = `dev-${randomBytes(4).toString('hex')}`;
  const secret = randomBytes(24).toString('base64url');
  const created = await repo.insertClientIfNone(ctx.db, {
    id,
    name: 'Development client',
    secret_hash: hashClientSecret(secret),
    first_party: 1,
    disabled: 0,
    created_at: nowIso(),
  });
  if (!created) return;
  const file = devClientFile(ctx.config.DATABASE_URL);
  if (file) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify({ client_id: id, client_secret: secret }, null, 2)}\n`, {
      mode: 0o600,
    });
    chmodSync(file, 0o600);
  }
  log.info({ client_id: id, file }, 'development client created');
  if (ctx.config.LOG_LEVEL === 'silent') return;
  const base = `http://${ctx.config.HOST}:${ctx.config.PORT}`;
  // Printed on stdout (not only the JSON log) so `npm start` shows it to a person, once.
  console.log(
    [
      '',
      'Created a first-party development client (shown only this once):',
      `  client_id:     ${id}`,
      `  client_secret: ${secret}`,
      ...(file ? [`  also saved to ${file} (mode 0600)`] : []),
      'Get a guest token:',
      `  curl -s -u '${id}:${secret}' -d grant_type=client_credentials ${base}/oauth/token`,
      '',
    ].join('\n'),
  );
}
