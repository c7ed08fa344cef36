// Set-based writes of the bulk seeding path: many rows per statement. Only the world generator uses these.
import { type Insertable, sql } from 'kysely';
import type { Database, Db, Dialect } from '../../db/database.ts';

/** Bound parameters per statement we stay under (SQLite allows 32,766, PostgreSQL 65,535). */
const MAX_PARAMETERS = 30_000;

/** Inserts rows in as few multi-row statements as the engines' parameter limits allow. */
export async function insertRows<T extends keyof Database & string>(
  db: Db,
  table: T,
  rows: Insertable<Database[T]>[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0] as object).length;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns));
  for (let i = 0; i < rows.length; i += perStatement) {
    // The table is generic here; the caller's signature types the rows.
    const chunk = rows.slice(i, i + perStatement) as never;
    await db.insertInto(table).values(chunk).execute();
  }
}

/** Adds each delta to its user's karma total: one statement per chunk on PostgreSQL, one per user on SQLite. */
export async function addToUsersKarma(db: Db, dialect: Dialect, deltas: Map<string, number>): Promise<void> {
  const entries = [...deltas].filter(([, d]) => d !== 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  if (dialect === 'sqlite') {
    // In-process prepared statements are cheaper than building a VALUES list.
    for (const [uuid, delta] of entries) {
      await db
        .updateTable('users')
        .set((eb) => ({ karma: eb('karma', '+', delta) }))
        .where('uuid', '=', uuid)
        .execute();
    }
    return;
  }
  for (let i = 0; i < entries.length; i += 5000) {
    const values = sql.join(
      entries.slice(i, i + 5000).map(([uuid, delta]) => sql`(${uuid}, ${delta}::integer)`),
    );
    await sql`UPDATE users AS u SET karma = u.karma + v.delta FROM (VALUES ${values}) AS v(uuid, delta) WHERE u.uuid = v.uuid`.execute(
      db,
    );
  }
}
