import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * A counter that moves with every change a token check could see (docs/decisions.md, "Token checks keyed by the
 * auth version"): any write to tokens or clients, a user's role changed or a user deleted. The exact cache of token
 * checks is kept under it instead of under the data version, which every post, comment or reaction moves: under
 * writes each request read its token row again, a round trip on PostgreSQL (one of about ten of a post). Triggers
 * keep it, so a revocation by another process, the CLI or SQL by hand moves it too. PostgreSQL bumps it once per
 * statement; SQLite has row triggers only.
 */
export function authVersionMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`CREATE TABLE auth_version (id integer PRIMARY KEY CHECK (id = 1), n bigint NOT NULL)`.execute(
        db,
      );
      await sql`INSERT INTO auth_version (id, n) VALUES (1, 0)`.execute(db);
      const watched: [table: string, events: string[]][] = [
        ['tokens', ['INSERT', 'UPDATE', 'DELETE']],
        ['clients', ['INSERT', 'UPDATE', 'DELETE']],
        ['users', ['UPDATE OF role', 'DELETE']],
      ];
      if (dialect === 'postgres') {
        // The table named by schema: a trigger runs under the search_path of whoever writes.
        const schema =
          (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s ?? 'public';
        await sql
          .raw(`CREATE FUNCTION bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            UPDATE "${schema.replace(/"/g, '""')}".auth_version SET n = n + 1 WHERE id = 1;
            RETURN NULL;
          END $$`)
          .execute(db);
        for (const [table, events] of watched) {
          // TRUNCATE too: an operator emptying tokens (or users, clients with CASCADE) logs everyone out.
          await sql
            .raw(`CREATE TRIGGER ${table}_auth_version AFTER ${[...events, 'TRUNCATE'].join(' OR ')}
              ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION bump_auth_version()`)
            .execute(db);
        }
        return;
      }
      for (const [table, events] of watched) {
        for (const event of events) {
          const name = `${table}_auth_version_${event.split(' ')[0]?.toLowerCase()}`;
          await sql
            .raw(`CREATE TRIGGER ${name} AFTER ${event} ON ${table}
              BEGIN UPDATE auth_version SET n = n + 1 WHERE id = 1; END`)
            .execute(db);
        }
      }
    },
  };
}
