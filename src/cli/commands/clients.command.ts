import { randomBytes } from 'node:crypto';
import { listClients } from '../../modules/auth/auth.repository.ts';
import { disableClient, saveClient } from '../../modules/auth/auth.service.ts';
import { type Command, flagValue } from '../command.ts';

const USAGE = [
  'clients create --name NAME [--first-party]   create an OAuth client; prints its id and secret once',
  '  clients list                                 list clients (never their secrets)',
  '  clients disable ID                           disable a client: its tokens stop working at once',
].join('\n');

/** `clients create|list|disable`: manage OAuth clients. */
export const clientsCommand: Command = {
  name: 'clients',
  usage: USAGE,
  async run(ctx, args) {
    const [sub, ...rest] = args;
    if (sub === 'create') {
      const name = flagValue(rest, '--name');
      if (!name || name.startsWith('--') || name.length > 100) {
        console.error('clients create needs --name NAME (1-100 characters)');
        return 2;
      }
      const firstParty = rest.includes('--first-party');
      const id = `c-${randomBytes(8).toString('hex')}`;
      const secret = randomBytes(32).toString('base64url');
      await saveClient(ctx.db, { id, secret, name, firstParty });
      console.log(
        `created client "${name}"${firstParty ? ' (first-party: may use the password grant)' : ''}`,
      );
      console.log(`client_id:     ${id}`);
      console.log(`client_secret: ${secret}`);
      console.log('The secret is shown only now; only its hash is stored.');
      return 0;
    }
    if (sub === 'list') {
      const rows = await listClients(ctx.db);
      if (rows.length === 0) console.log('no clients');
      for (const c of rows) {
        const flags = [c.first_party ? 'first-party' : 'third-party', c.disabled ? 'DISABLED' : 'active'];
        console.log(`${c.id}\t${c.name}\t${flags.join(', ')}\tcreated ${c.created_at}`);
      }
      return 0;
    }
    if (sub === 'disable') {
      const id = rest[0];
      if (!id) {
        console.error('clients disable needs the client id (see clients list)');
        return 2;
      }
      if (!(await disableClient(ctx.db, id))) {
        console.error(`no client with id ${id} (see clients list)`);
        return 1;
      }
      console.log(`client ${id} disabled; its tokens are revoked and refused from the next request on`);
      return 0;
    }
    console.error(`usage:\n  ${USAGE}`);
    return 2;
  },
};
