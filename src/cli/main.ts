import { ConfigError, loadConfig } from '../config.ts';
import type { Context } from '../context.ts';
import { connectDatabase } from '../db/connect.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { EventBus } from '../events/bus.ts';
import { modules } from '../modules/index.ts';
import type { Command } from './command.ts';
import { checkCommand } from './commands/check.command.ts';
import { clientsCommand } from './commands/clients.command.ts';
import { mediaCommand } from './commands/media.command.ts';
import { migrateCommand } from './commands/migrate.command.ts';
import { searchCommand } from './commands/search.command.ts';
import { usersCommand } from './commands/users.command.ts';

/** Every CLI command; each module adds its own line. */
const commands: Command[] = [
  migrateCommand,
  checkCommand,
  clientsCommand,
  usersCommand,
  searchCommand,
  mediaCommand,
];

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = commands.find((c) => c.name === name);
  if (!command) {
    console.error(
      `usage: npm run cli -- COMMAND [args]\n\n${commands.map((c) => `  ${c.usage}`).join('\n')}`,
    );
    return name === undefined || name === 'help' ? 0 : 2;
  }
  const config = loadConfig();
  const handle = connectDatabase(config.DATABASE_URL, { synchronous: config.SQLITE_SYNCHRONOUS });
  try {
    const ran = await migrateToLatest(handle.db, handle.dialect);
    if (ran.length > 0) console.log(`migrated: ${ran.join(', ')}`);
    const ctx: Context = {
      db: handle.db,
      readDb: handle.db,
      dialect: handle.dialect,
      config,
      bus: new EventBus(),
    };
    // Writes from the CLI have the same consequences (karma, tags) as writes through the API.
    for (const m of modules) m.subscribe?.(ctx);
    return await command.run(ctx, args);
  } finally {
    await handle.db.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // An operational error (database unreachable, locked, a migration refused) is its message; DEBUG=1 adds the stack.
    // A connection refused on every address of a host (::1 and 127.0.0.1) is an AggregateError with no message.
    const message =
      err instanceof AggregateError && !err.message
        ? err.errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ')
        : err instanceof Error
          ? err.message
          : String(err);
    const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
    console.error(
      err instanceof ConfigError || !process.env.DEBUG ? `error: ${message}${code ? ` (${code})` : ''}` : err,
    );
    process.exit(1);
  },
);
