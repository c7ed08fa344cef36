import { type Insertable, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { applyFilters, applyOrderAndWindow, type ListQuery } from '../../http/list-query.ts';
import type { ConnectionTable } from './connection.table.ts';

/** The key that makes one connection per pair, whichever side asked: the two uuids in sorted order. */
export function pairKey(a: string, b: string): string {
  return a < b ? `${a}:${b}` : `${b}:${a}`;
}

/** Stores a new connection row. */
export async function insertConnection(db: Db, row: Insertable<ConnectionTable>): Promise<void> {
  await db.insertInto('connections').values(row).execute();
}

/** A connection row by uuid; `forUpdate` locks it until the transaction ends (PostgreSQL only). */
export async function findConnectionByUuid(db: Db, uuid: string, forUpdate = false) {
  return db
    .selectFrom('connections')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
}

/** The connection of a pair of users, whichever side asked. */
export async function findConnectionByPair(db: Db, a: string, b: string) {
  return db.selectFrom('connections').selectAll().where('pair_key', '=', pairKey(a, b)).executeTakeFirst();
}

/** Sets a connection's status. */
export async function updateConnectionStatus(db: Db, uuid: string, status: string, now: string) {
  await db.updateTable('connections').set({ status, updated_at: now }).where('uuid', '=', uuid).execute();
}

/** Removes a connection row. */
export async function deleteConnectionRow(db: Db, uuid: string): Promise<void> {
  await db.deleteFrom('connections').where('uuid', '=', uuid).execute();
}

/** Records both directions of a friendship. */
export async function insertFriendPair(db: Db, a: string, b: string): Promise<void> {
  await db
    .insertInto('friends')
    .values([
      { user_uuid: a, friend_uuid: b },
      { user_uuid: b, friend_uuid: a },
    ])
    .execute();
}

/** Removes both directions of a friendship. */
export async function deleteFriendPair(db: Db, a: string, b: string): Promise<void> {
  await db
    .deleteFrom('friends')
    .where((eb) =>
      eb.or([
        eb.and([eb('user_uuid', '=', a), eb('friend_uuid', '=', b)]),
        eb.and([eb('user_uuid', '=', b), eb('friend_uuid', '=', a)]),
      ]),
    )
    .execute();
}

/** Every connection a user is a side of; `forUpdate` locks them until the transaction ends (PostgreSQL only). */
export async function findConnectionsOfUser(db: Db, userUuid: string, forUpdate = false) {
  return db
    .selectFrom('connections')
    .selectAll()
    .where((eb) => eb.or([eb('user_uuid', '=', userUuid), eb('target_user_uuid', '=', userUuid)]))
    .orderBy('uuid')
    .$if(forUpdate, (q) => q.forUpdate())
    .execute();
}

// What a list shows of a connection: the columns each side's covering index holds (migration 0019), so SQLite reads
// a page and its sort keys from those indexes, not the table.
const LISTED_COLUMNS = [
  'connections.uuid',
  'connections.user_uuid',
  'connections.target_user_uuid',
  'connections.status',
  'connections.created_at',
  'connections.updated_at',
] as const;

/** A user's connections under the list query's filters (paging aside), either side. */
function connectionsOf(db: Db, userUuid: string, lq: ListQuery) {
  return applyFilters(
    db
      .selectFrom('connections')
      .where((eb) =>
        eb.or([
          eb('connections.user_uuid', '=', userUuid),
          eb('connections.target_user_uuid', '=', userUuid),
        ]),
      ),
    lq,
    'connections.uuid',
  );
}

/** The query of one page of a user's connections, filtered and sorted by the list query (unexecuted). */
export function connectionPageQuery(db: Db, userUuid: string, lq: ListQuery) {
  return applyOrderAndWindow(connectionsOf(db, userUuid, lq).select(LISTED_COLUMNS), lq, 'connections.uuid', [
    { column: 'connections.created_at', direction: 'desc' },
  ]);
}

/** One page of a user's connections, filtered and sorted by the list query, with the exact filtered total. */
export async function listConnectionsOfUser(db: Db, userUuid: string, lq: ListQuery) {
  const rows = await connectionPageQuery(db, userUuid, lq).execute();
  const total = await connectionsOf(db, userUuid, lq)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { rows, total: Number(total.n) };
}

/**
 * Of `owners`, those whose friends-only items `viewer` may see (their confirmed friends): the check of a page's
 * friends-only rows against the owner each row was read with.
 */
export async function findFriendsAmong(
  db: Db,
  dialect: Dialect,
  viewer: string,
  owners: string[],
): Promise<Set<string>> {
  if (owners.length === 0) return new Set();
  const among =
    dialect === 'postgres'
      ? sql`f.friend_uuid = any(${owners})`
      : sql`f.friend_uuid in (${sql.join(owners)})`;
  const r = await sql<{ friend_uuid: string }>`select f.friend_uuid from friends f
    where f.user_uuid = ${viewer} and ${among}`.execute(db);
  return new Set(r.rows.map((row) => row.friend_uuid));
}

/** A friendship that the friends table and the confirmed connections disagree on (findFriendshipMismatches). */
export interface FriendshipMismatch {
  user_uuid: string;
  friend_uuid: string;
  problem: 'friends row without a confirmed connection' | 'confirmed connection without its friends row';
}

/**
 * Up to `limit` pairs where the friends table (what every visibility check reads) and the confirmed connections
 * (what the API shows) disagree: a friends row in either direction without a confirmed connection of the pair, or a
 * confirmed connection missing one of its two rows.
 */
export async function findFriendshipMismatches(db: Db, limit: number): Promise<FriendshipMismatch[]> {
  const r = await sql<FriendshipMismatch>`
    select f.user_uuid, f.friend_uuid, 'friends row without a confirmed connection' as problem from friends f
    where not exists (select 1 from connections c where c.status = 'confirmed'
        and c.user_uuid = f.user_uuid and c.target_user_uuid = f.friend_uuid)
      and not exists (select 1 from connections c where c.status = 'confirmed'
        and c.user_uuid = f.friend_uuid and c.target_user_uuid = f.user_uuid)
    union all
    select s.a as user_uuid, s.b as friend_uuid, 'confirmed connection without its friends row' as problem from (
      select c.user_uuid as a, c.target_user_uuid as b from connections c where c.status = 'confirmed'
      union all
      select c.target_user_uuid as a, c.user_uuid as b from connections c where c.status = 'confirmed'
    ) s
    where not exists (select 1 from friends f where f.user_uuid = s.a and f.friend_uuid = s.b)
    limit ${limit}`.execute(db);
  return r.rows;
}
