import { type Kysely, sql } from 'kysely';

/**
 * Runs raw statements in one transaction (the caller's, if it is in one: the migrator's, on both engines). Stopped
 * halfway outside one, a rerun would find triggers gone or send FTS5 'delete' for entries already deleted, which
 * corrupts an external-content index.
 */
export async function runStatementsAtomically(
  db: Kysely<unknown>,
  statements: readonly string[],
): Promise<void> {
  const run = async (trx: Kysely<unknown>) => {
    for (const statement of statements) await sql.raw(statement).execute(trx);
  };
  if (db.isTransaction) await run(db);
  else await db.transaction().execute(run);
}
