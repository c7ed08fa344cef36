import { type Insertable, type Selectable, sql, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { queryTemplate } from '../../db/query-template.ts';
import {
  applyFilters,
  applyOrderAndWindow,
  type ListQuery,
  type WindowOptions,
} from '../../http/list-query.ts';
import type { KarmaTable } from './karma.table.ts';

/** A stored karma record. */
export type KarmaRow = Selectable<KarmaTable>;

/** Signed value of a record in the total: add counts up, subtract counts down. */
const SIGNED = sql<number>`case when karma_type = 'add' then points else -points end`;

/**
 * Locks the user's row until the transaction ends, so the daily-cap count and the write it decides are not raced
 * (SQLite transactions are serialized already). PostgreSQL: `for no key update`, the lock an update of
 * users.karma takes anyway; plain `for update` would conflict with the key-share locks that inserting a row
 * referencing the user (the post, the karma record) holds, and two writers would deadlock.
 * Returns whether the user exists.
 */
export async function lockUserForKarma(db: Db, userUuid: string, forUpdate: boolean): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('uuid')
    .where('uuid', '=', userUuid)
    .$if(forUpdate, (q) => q.forNoKeyUpdate())
    .executeTakeFirst();
  return row !== undefined;
}

/** Adds `delta` to the stored total in one atomic statement (never read-modify-write). */
export async function addToUserKarma(db: Db, userUuid: string, delta: number): Promise<void> {
  if (delta === 0) return;
  await db
    .updateTable('users')
    .set((eb) => ({ karma: eb('karma', '+', delta) }))
    .where('uuid', '=', userUuid)
    .execute();
}

/**
 * The query counting how many of the user's `add` records written by `rule` since `since` still net points (a
 * source granted and then taken back no longer counts; the record's `event`, which its owner may edit, does not
 * decide), counted only up to `cap`: the caller needs to know whether the cap is reached. Its cost does not grow
 * with the 0-point records a busy author writes past the cap: both engines read the partial index of the records
 * that earned points (karma_netting_adds, migrations 0008, 0010 and 0023), at most the cap (plus those taken
 * back) per user, rule and day. Whether a source still nets points is summed only for the sources the user has a
 * `subtract` record of since `since` (a compensation follows its grant, so one of today's grants is taken back
 * today or not at all): that list comes from the small partial index of subtract records (karma_subtracts,
 * migration 0010) once per query, instead of one probe of the source per counted record. Unexecuted (tests
 * explain its plan; insertGrantRecord embeds it).
 */
export function nettingAddRecordsCount(db: Db, userUuid: string, rule: string, since: string, cap: number) {
  const netting = db
    .selectFrom('karma as k')
    .select(sql<string>`coalesce(k.source_uuid, k.uuid)`.as('source'))
    .distinct()
    .where('k.user_uuid', '=', userUuid)
    // The expression of the partial index's key, as migration 0023 wrote it.
    .where(sql<string>`coalesce(k.rule, k.event)`, '=', rule)
    // Constants, not bound values: the partial index's condition must appear literally (SQLite matches the terms;
    // PostgreSQL's planner must be able to prove it whatever the parameters).
    .where(sql<boolean>`k.karma_type = 'add' and k.points > 0`)
    .where('k.created_at', '>=', since)
    .where(
      sql<boolean>`(k.source_uuid is null
        or k.source_uuid not in (select t.source_uuid from karma t where t.user_uuid = ${userUuid}
          and t.karma_type = 'subtract' and t.created_at >= ${since} and t.source_uuid is not null)
        or (select coalesce(sum(case when s.karma_type = 'add' then s.points else -s.points end), 0)
          from karma s where s.user_uuid = k.user_uuid and s.source_uuid = k.source_uuid) > 0)`,
    )
    // The cap as a literal, not a bound value: SQLite ran the counting subquery in about half the time (a cap comes
    // from the validated karma rules, never from a request; docs/decisions.md, twenty-first session).
    .limit(sql.lit(capLiteral(cap)));
  return db.selectFrom(netting.as('x')).select(sql<number>`count(*)`.as('n'));
}

/** A daily cap as SQL text may hold it: a non-negative integer, else an error (a programming error, never input). */
function capLiteral(cap: number): number {
  if (!Number.isSafeInteger(cap) || cap < 0)
    throw new Error(`a daily cap must be a non-negative integer, not ${cap}`);
  return cap;
}

/** A grant's `add` record before its points are decided: the rule's points and the source it earns them from. */
export type GrantRecord = Insertable<KarmaTable> & { rule: string; source_uuid: string; points: number };

/**
 * Stores a grant's `add` record, deciding its points in the same statement: none is stored when the user no longer
 * exists or already nets points from the record's source; else it holds `record.points`, or 0 once `cap` of the
 * user's records of the rule since `since` still net points (nettingAddRecordsCount; no cap when null). With
 * `onlyPastCap` it is stored only at 0 points, past the cap. Returns the points stored, or undefined when nothing
 * was. The row's values are bound like a plain insert's (PostgreSQL types them from the target columns).
 */
export async function insertGrantRecord(
  db: Db,
  record: GrantRecord,
  since: string,
  cap: number | null,
  onlyPastCap = false,
): Promise<number | undefined> {
  // Checked before it keys a compiled statement: JSON writes a cap that is not a number as null, no cap.
  if (cap !== null) capLiteral(cap);
  const [row] = (await insertGrantQuery(db, { ...record, since }, { cap, onlyPastCap })).rows;
  return row === undefined ? undefined : Number(row.points);
}

const insertGrantQuery = queryTemplate(
  (
    db,
    record: GrantRecord & { since: string },
    { cap, onlyPastCap }: { cap: number | null; onlyPastCap: boolean },
  ) => {
    const user = record.user_uuid;
    const pastCap =
      cap === null
        ? sql<boolean>`1 = 0`
        : sql<boolean>`(${nettingAddRecordsCount(db, user, record.rule, record.since, cap)}) >= ${sql.lit(capLiteral(cap))}`;
    const points = onlyPastCap
      ? sql<number>`0`
      : sql<number>`case when ${pastCap} then 0 else ${record.points} end`;
    return db
      .insertInto('karma')
      .columns(GRANT_COLUMNS)
      .expression(
        sql`select ${record.uuid}, ${user}, ${record.event}, ${record.rule}, ${record.target_uuid},
        ${record.target_type}, ${record.karma_type}, ${points}, ${record.source_uuid}, ${record.created_at},
        ${record.updated_at}
      where exists (select 1 from users where uuid = ${user})
        and (select coalesce(sum(${SIGNED}), 0) from karma where user_uuid = ${user} and source_uuid = ${record.source_uuid}) <= 0
        ${onlyPastCap ? sql`and ${pastCap}` : sql``}`,
      )
      .returning('points');
  },
);

// The columns insertGrantRecord fills, in the order of its select.
const GRANT_COLUMNS = [
  'uuid',
  'user_uuid',
  'event',
  'rule',
  'target_uuid',
  'target_type',
  'karma_type',
  'points',
  'source_uuid',
  'created_at',
  'updated_at',
] as const;

/** Stores a new record. */
export async function insertKarma(db: Db, row: Insertable<KarmaTable>): Promise<void> {
  await db.insertInto('karma').values(row).execute();
}

/** A record by uuid. */
export async function findKarmaByUuid(db: Db, uuid: string): Promise<KarmaRow | undefined> {
  return db.selectFrom('karma').selectAll().where('uuid', '=', uuid).executeTakeFirst();
}

/**
 * The records of some uuids, in no particular order (missing ones left out); PostgreSQL. The uuids go as one array
 * parameter, so the statement's text is the same for any number of them and is prepared once (a list of parameters
 * made a text, and a plan, per count).
 */
export async function findKarmaByUuidsPg(db: Db, uuids: string[]): Promise<KarmaRow[]> {
  if (uuids.length === 0) return [];
  return db.selectFrom('karma').selectAll().where('uuid', '=', sql<string>`any(${uuids})`).execute();
}

/** The owner (user_uuid) of a record, or undefined when it does not exist. */
export async function findKarmaOwner(db: Db, uuid: string): Promise<string | undefined> {
  const row = await db.selectFrom('karma').select('user_uuid').where('uuid', '=', uuid).executeTakeFirst();
  return row?.user_uuid;
}

/** Changes a record; returns whether it existed. */
export async function updateKarma(db: Db, uuid: string, patch: Updateable<KarmaTable>): Promise<boolean> {
  const r = await db.updateTable('karma').set(patch).where('uuid', '=', uuid).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Removes a record; returns whether it existed. */
export async function deleteKarma(db: Db, uuid: string): Promise<boolean> {
  const r = await db.deleteFrom('karma').where('uuid', '=', uuid).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

/** Users holding records caused by a source item, in uuid order (the order locks are taken in). */
export async function findUsersBySource(db: Db, sourceUuid: string): Promise<string[]> {
  const rows = await db
    .selectFrom('karma')
    .select('user_uuid')
    .distinct()
    .where('source_uuid', '=', sourceUuid)
    .orderBy('user_uuid')
    .execute();
  return rows.map((r) => r.user_uuid);
}

/**
 * Sources of the records a rule granted about a target (e.g. the reactions a post received), in order, as the
 * records say now: their owner may have edited the target away (the rule is kept, see nettingAddRecordsCount).
 */
export async function findSourcesOfTarget(db: Db, targetUuid: string, rule: string): Promise<string[]> {
  const rows = await db
    .selectFrom('karma')
    .select('source_uuid')
    .distinct()
    .where('target_uuid', '=', targetUuid)
    .where(sql<string>`coalesce(rule, event)`, '=', rule)
    .where('source_uuid', 'is not', null)
    .orderBy('source_uuid')
    .execute();
  return rows.map((r) => r.source_uuid as string);
}

/** What a source item currently nets for a user: its add points minus its subtract points. */
export async function netKarmaOfSource(db: Db, userUuid: string, sourceUuid: string): Promise<number> {
  const row = await db
    .selectFrom('karma')
    .select(sql<number>`coalesce(sum(${SIGNED}), 0)`.as('net'))
    .where('user_uuid', '=', userUuid)
    .where('source_uuid', '=', sourceUuid)
    .executeTakeFirstOrThrow();
  return Number(row.net);
}

/** Removes every record of a user. */
export async function deleteKarmaOfUser(db: Db, userUuid: string): Promise<void> {
  await db.deleteFrom('karma').where('user_uuid', '=', userUuid).execute();
}

/** Sets a user's stored total (only to re-align it with a ledger emptied in the same transaction). */
export async function resetUserKarma(db: Db, userUuid: string): Promise<void> {
  await db.updateTable('users').set({ karma: 0 }).where('uuid', '=', userUuid).execute();
}

function ownRecords(db: Db, userUuid: string, lq: ListQuery) {
  return applyFilters(db.selectFrom('karma').where('user_uuid', '=', userUuid), lq, 'uuid');
}

/** The order of a karma list without sortby: newest first (both ways of reading a page must agree). */
const NEWEST_FIRST: ListQuery['sort'] = [{ column: 'created_at', direction: 'desc' }];

/** One page of a user's records under the list query (`options`: see applyOrderAndWindow). */
export async function listKarmaOfUser(
  db: Db,
  userUuid: string,
  lq: ListQuery,
  options: WindowOptions = {},
): Promise<KarmaRow[]> {
  return applyOrderAndWindow(
    ownRecords(db, userUuid, lq).selectAll(),
    lq,
    'uuid',
    NEWEST_FIRST,
    options,
  ).execute();
}

/**
 * PostgreSQL: one page of a user's records when the caller counted few matches of the filters (at most a thousand).
 * They are read in a subquery that OFFSET 0 keeps the planner from flattening, so it reads them through the filters'
 * index and then sorts them. Flattened, it walks the sort's index and reads the table row of each of the user's
 * records to test the filters: 1.8 s from disk for bench_user's 2 `commentCreated` records among 23,000.
 */
export async function listFewKarmaOfUser(db: Db, userUuid: string, lq: ListQuery): Promise<KarmaRow[]> {
  const matches = ownRecords(db, userUuid, lq).selectAll().offset(0);
  return applyOrderAndWindow(db.selectFrom(matches.as('m')).selectAll(), lq, 'uuid', NEWEST_FIRST).execute();
}

/** The exact number of a user's records matching the list query's filters. */
export async function countKarmaOfUser(db: Db, userUuid: string, lq: ListQuery): Promise<number> {
  const row = await ownRecords(db, userUuid, lq)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A user whose stored total differs from the ledger. */
export interface KarmaMismatch {
  uuid: string;
  username: string;
  stored: number;
  ledger: number;
}

/** Every user whose users.karma differs from sum(add) - sum(subtract) of their records, in one grouped query. */
export async function findKarmaMismatches(db: Db): Promise<KarmaMismatch[]> {
  const ledger = sql<number>`coalesce(sum(case when k.karma_type = 'add' then k.points when k.karma_type = 'subtract' then -k.points else 0 end), 0)`;
  const rows = await db
    .selectFrom('users as u')
    .leftJoin('karma as k', 'k.user_uuid', 'u.uuid')
    .select(['u.uuid', 'u.username', 'u.karma as stored', ledger.as('ledger')])
    .groupBy(['u.uuid', 'u.username', 'u.karma'])
    .having(sql<boolean>`u.karma <> ${ledger}`)
    .orderBy('u.uuid')
    .execute();
  return rows.map((r) => ({
    uuid: r.uuid,
    username: r.username,
    stored: Number(r.stored),
    ledger: Number(r.ledger),
  }));
}

/** How many users and records the check looked at. */
export async function countKarmaScope(db: Db): Promise<{ users: number; records: number }> {
  const u = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const k = await db
    .selectFrom('karma')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { users: Number(u.n), records: Number(k.n) };
}
