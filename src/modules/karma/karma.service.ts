import { type Context, locksRows, readCacheScope } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { cachedRead, type RequestVersion } from '../../db/exact-cache.ts';
import { nowIso, uuidv7 } from '../../db/time.ts';
import { turnBatchedReads } from '../../db/turn-batch.ts';
import { ApiError, type ErrorDetail, objectNotFound } from '../../http/errors.ts';
import { type ListQuery, lateRowsFor, parseListQuery, type Whitelist } from '../../http/list-query.ts';
import { LIST_MAX_OFFSET } from '../../http/paging.ts';
import {
  existingAssociations,
  type ReactionKind,
  reactionsBy,
  reactionsOn,
} from '../tag-association/tag-association.service.ts';
import { findTarget, TARGET_TYPES, type TargetKind } from '../target/target.repository.ts';
import {
  addToUserKarma,
  countKarmaOfUser,
  countKarmaScope,
  deleteKarma,
  deleteKarmaOfUser,
  findKarmaByUuid,
  findKarmaByUuidsPg,
  findKarmaMismatches,
  findKarmaOwner,
  findSourcesOfTarget,
  findUsersBySource,
  type GrantRecord,
  insertGrantRecord,
  insertKarma,
  type KarmaMismatch,
  type KarmaRow,
  listFewKarmaOfUser,
  listKarmaOfUser,
  lockUserForKarma,
  netKarmaOfSource,
  resetUserKarma,
  updateKarma,
} from './karma.repository.ts';
import {
  COMPENSATION_EVENT,
  KARMA_EVENTS,
  type KarmaRule,
  type KarmaRuleName,
  type KarmaRules,
  loadKarmaRules,
  ruleOfEvent,
} from './karma.rules.ts';

/** A karma record as the API shows it. */
export interface Karma {
  uuid: string;
  type: 'karma';
  user_uuid: string;
  event: string;
  target_uuid: string;
  target_type: string;
  karma_type: 'add' | 'subtract';
  points: number;
  created_at: string;
  updated_at: string;
}

/** Maps a stored record to the API object. */
export function toKarma(row: KarmaRow): Karma {
  return {
    uuid: row.uuid,
    type: 'karma',
    user_uuid: row.user_uuid,
    event: row.event,
    target_uuid: row.target_uuid,
    target_type: row.target_type,
    karma_type: row.karma_type === 'subtract' ? 'subtract' : 'add',
    points: Number(row.points),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const rulesByContext = new WeakMap<Context, KarmaRules>();

/** Loads (and validates) the KARMA_RULES file for this context once; a bad file throws a ConfigError. */
export function karmaRules(ctx: Context): KarmaRules {
  let rules = rulesByContext.get(ctx);
  if (!rules) {
    rules = loadKarmaRules(ctx.config.KARMA_RULES);
    rulesByContext.set(ctx, rules);
  }
  return rules;
}

function signed(karmaType: string, points: number): number {
  return karmaType === 'add' ? points : -points;
}

function startOfUtcDay(): string {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  return d.toISOString();
}

/** What a granting event is about. */
export interface Grant {
  rule: KarmaRuleName;
  userUuid: string;
  targetUuid: string;
  targetType: string;
  /** The item whose deletion takes the points back. */
  sourceUuid: string;
}

/**
 * Writes one `add` record under a rule inside `trx` and raises the user's total by its points. Past the daily cap
 * the record is still written, with 0 points. The cap counts only today's records that still net points, so a
 * source that was granted and then taken back (a reaction removed) frees its place. A user who no longer exists, or
 * who already nets points from this source, gets nothing.
 *
 * The insert decides all of that in its own statement (insertGrantRecord). On PostgreSQL a grant worth points
 * first tries to store a record past the cap without a lock: a 0-point record (the author is past the cap, as a
 * busy one is all day) changes no total, so a busy author's writes do not queue on their row through every commit.
 * Reading without the lock can only see fewer of today's records than are committed, or a place freed by a
 * compensation not committed yet: both give the outcome of one serial order. Under the cap it locks the user's row
 * and then inserts, in a statement whose snapshot follows the lock, so two concurrent grants cannot both take the
 * last place. SQLite runs one write transaction at a time, so its one insert stands.
 */
export async function grantKarma(ctx: Context, trx: Db, g: Grant): Promise<void> {
  const rule = karmaRules(ctx)[g.rule];
  const since = startOfUtcDay();
  const record = addRecord(g, rule.points, nowIso());
  if (rule.points > 0 && locksRows(ctx)) {
    if (
      rule.dailyCap !== null &&
      (await insertGrantRecord(trx, record, since, rule.dailyCap, true)) !== undefined
    )
      return;
    if (!(await lockUserForKarma(trx, g.userUuid, true))) return;
  }
  const points = await insertGrantRecord(trx, record, since, rule.dailyCap);
  if (points) await addToUserKarma(trx, g.userUuid, points);
}

/** The points a rule gives when the user already has `today` records of it that earned points today. */
export function pointsUnderCap(rule: KarmaRule, today: number): number {
  return rule.dailyCap !== null && today >= rule.dailyCap ? 0 : rule.points;
}

/** The `add` record of a grant worth `points`, stamped `now`. */
export function addRecord(g: Grant, points: number, now: string): GrantRecord {
  return {
    uuid: uuidv7(),
    user_uuid: g.userUuid,
    event: g.rule,
    rule: g.rule,
    target_uuid: g.targetUuid,
    target_type: g.targetType,
    karma_type: 'add',
    points,
    source_uuid: g.sourceUuid,
    created_at: now,
    updated_at: now,
  };
}

/**
 * For every user who currently nets points from a deleted source, writes a `subtract` record of exactly that net
 * (named after the rule's compensation, e.g. postDeleted) and lowers the total by it, so the history stays auditable.
 */
export async function compensateKarma(
  ctx: Context,
  trx: Db,
  rule: KarmaRuleName,
  sourceUuid: string,
  target: { uuid: string; type: string },
): Promise<void> {
  const users = await findUsersBySource(trx, sourceUuid);
  for (const userUuid of users) {
    if (!(await lockUserForKarma(trx, userUuid, locksRows(ctx)))) continue;
    const net = await netKarmaOfSource(trx, userUuid, sourceUuid);
    if (net <= 0) continue;
    const now = nowIso();
    await insertKarma(trx, {
      uuid: uuidv7(),
      user_uuid: userUuid,
      event: COMPENSATION_EVENT[rule],
      rule,
      target_uuid: target.uuid,
      target_type: target.type,
      karma_type: 'subtract',
      points: net,
      source_uuid: sourceUuid,
      created_at: now,
      updated_at: now,
    });
    await addToUserKarma(trx, userUuid, -net);
  }
}

/**
 * Takes back the reactions a deleted post or comment received. The tags module may also report each removed
 * reaction; whichever comes second finds nothing left to take back, so nothing is subtracted twice.
 */
export async function compensateReactionsOf(
  ctx: Context,
  trx: Db,
  target: { uuid: string; type: string },
): Promise<void> {
  // The reactions themselves name the sources (the records' owner may have edited their event or target), and the
  // records still naming the target cover a reaction whose row is already gone. A record its owner moved here by an
  // edit names a reaction that still exists elsewhere: that one is not this target's to take back.
  const on = new Set(await reactionsOn(trx, target.type as ReactionKind, target.uuid));
  const named = (await findSourcesOfTarget(trx, target.uuid, 'emotionReceived')).filter((s) => !on.has(s));
  const elsewhere = new Set(await existingAssociations(trx, named));
  const sources = new Set([...on, ...named.filter((s) => !elsewhere.has(s))]);
  for (const source of [...sources].sort()) {
    if (source === target.uuid) continue;
    await compensateKarma(ctx, trx, 'emotionReceived', source, target);
  }
}

/**
 * Takes back what the reactions of a user being deleted gave others: the tags module removes those reactions
 * without an emotionDeleted each, so the authors' records are compensated here, while the reactions still name them.
 */
export async function compensateReactionsBy(ctx: Context, trx: Db, userUuid: string): Promise<void> {
  for (const r of await reactionsBy(trx, userUuid)) {
    await compensateKarma(ctx, trx, 'emotionReceived', r.uuid, { uuid: r.target_uuid, type: r.target_type });
  }
}

/** Clears the ledger and the total of a user being deleted, in the deleting transaction. */
export async function clearKarmaOfUser(trx: Db, userUuid: string): Promise<void> {
  await deleteKarmaOfUser(trx, userUuid);
  await resetUserKarma(trx, userUuid);
}

/** The owner of a record, for the Owner check (undefined: no such record). */
export async function karmaOwner(ctx: Context, uuid: string): Promise<string | undefined> {
  return findKarmaOwner(ctx.db, uuid);
}

/**
 * A record by uuid, whoever owns it (for the Owner check that answers with it), from the exact read cache while
 * nothing was committed since (src/db/exact-cache.ts): on PostgreSQL a read is a round trip, and the record's
 * owner decides afterwards who may see it, so one cached copy serves every caller. `fresh`: read it anew.
 */
export async function findKarma(
  ctx: Context,
  uuid: string,
  read: { fresh: boolean; version: RequestVersion | null | undefined },
): Promise<Karma | undefined> {
  const { record } = await cachedRead(
    readCacheScope(ctx, read.version),
    'karma',
    // As sent: uuids are stored lower-case and compared exactly, so another spelling is another (missing) record.
    uuid,
    read.fresh,
    async () => {
      const row = await readKarmaRow(ctx, uuid);
      // Wrapped: a missing record (undefined) is an answer worth keeping too.
      return { record: row && toKarma(row) };
    },
  );
  return record;
}

/**
 * A record by uuid. On PostgreSQL the reads of one event-loop turn go as one statement (TurnBatchedReads); SQLite
 * reads in the process, where a statement costs no round trip.
 */
function readKarmaRow(ctx: Context, uuid: string): Promise<KarmaRow | undefined> {
  if (ctx.dialect !== 'postgres') return findKarmaByUuid(ctx.db, uuid);
  return turnBatchedReads(ctx.db, 'karma', loadKarmaRows).get(uuid);
}

async function loadKarmaRows(db: Db, uuids: string[]): Promise<Map<string, KarmaRow>> {
  const rows = await findKarmaByUuidsPg(db, uuids);
  return new Map(rows.map((r) => [r.uuid, r]));
}

/** One of the caller's records, or 404. */
export async function getKarma(ctx: Context, userUuid: string, uuid: string): Promise<Karma> {
  const row = await findKarmaByUuid(ctx.db, uuid);
  if (!row || row.user_uuid !== userUuid) throw objectNotFound('karma record');
  return toKarma(row);
}

/** The five fields of an update, all required. */
export interface KarmaUpdate {
  event: string;
  target_uuid: string;
  target_type: string;
  karma_type: 'add' | 'subtract';
  points: number;
}

/**
 * Replaces a record's fields and moves the owner's total by the difference, in one transaction. The event must be
 * known, a new target must exist (and be visible to the owner; the record's own may be gone), points may not exceed the rule's points for the
 * event, and the record's signed value may not rise: nobody mints karma by editing.
 */
export async function updateKarmaRecord(
  ctx: Context,
  userUuid: string,
  uuid: string,
  input: KarmaUpdate,
): Promise<Karma> {
  const rules = karmaRules(ctx);
  const details: ErrorDetail[] = [];
  const rule = ruleOfEvent(input.event);
  if (!rule) details.push({ field: 'event', message: `must be one of: ${KARMA_EVENTS.join(', ')}` });
  const kindOk = (TARGET_TYPES as readonly string[]).includes(input.target_type);
  if (!kindOk) details.push({ field: 'target_type', message: `must be one of: ${TARGET_TYPES.join(', ')}` });
  if (rule && input.points > rules[rule].points) {
    details.push({
      field: 'points',
      message: `may be at most ${rules[rule].points}, the points of the rule for ${input.event}`,
    });
  }
  if (details.length > 0) throw badUpdate(details);

  return ctx.db.transaction().execute(async (trx) => {
    await lockUserForKarma(trx, userUuid, locksRows(ctx));
    const row = await findKarmaByUuid(trx, uuid);
    if (!row || row.user_uuid !== userUuid) throw objectNotFound('karma record');
    // The rule's points alone do not stop minting: turning a 0-point (capped) record, a subtract record or a
    // cheap event into a richer one would raise the total. An edit may keep or lower a record's value, never raise it.
    const delta = signed(input.karma_type, input.points) - signed(row.karma_type, Number(row.points));
    if (delta > 0) {
      throw badUpdate([
        {
          field: 'points',
          message: `would raise your total by ${delta}; an update may keep or lower a record's value (now ${signed(row.karma_type, Number(row.points))}), never raise it`,
        },
      ]);
    }
    // The record's own target is kept as it is, even when gone (every take-back names a deleted item): the owner
    // may still lower such a record. Moving a record needs an item that exists and that the owner may see.
    const kept =
      input.target_type === row.target_type &&
      input.target_uuid.toLowerCase() === row.target_uuid.toLowerCase();
    const target = kept
      ? { uuid: row.target_uuid }
      : await findTarget(trx, input.target_type as TargetKind, input.target_uuid, userUuid);
    if (!target) {
      throw badUpdate([
        {
          field: 'target_uuid',
          message: `no ${input.target_type} with this uuid exists (or you may not see it); give an existing item of target_type`,
        },
      ]);
    }
    const now = nowIso();
    await updateKarma(trx, uuid, {
      // A record from before migration 0023 has no rule yet: pinned to the one its event names, before that changes.
      ...(row.rule === null ? { rule: ruleOfEvent(row.event) ?? row.event } : {}),
      event: input.event,
      target_uuid: target.uuid,
      target_type: input.target_type,
      karma_type: input.karma_type,
      points: input.points,
      updated_at: now,
    });
    await addToUserKarma(trx, userUuid, delta);
    const updated = await findKarmaByUuid(trx, uuid);
    return toKarma(updated as KarmaRow);
  });
}

function badUpdate(details: ErrorDetail[]): ApiError {
  return new ApiError(
    'invalid_request',
    `The karma update is not valid: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`,
    details,
  );
}

/**
 * Deletes one of the caller's `add` records and takes its value out of the total, in one transaction. A `subtract`
 * record is refused: it compensates a deleted source, and removing it would hand back points for something that no
 * longer exists.
 */
export async function deleteKarmaRecord(ctx: Context, userUuid: string, uuid: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await lockUserForKarma(trx, userUuid, locksRows(ctx));
    const row = await findKarmaByUuid(trx, uuid);
    if (!row || row.user_uuid !== userUuid) throw objectNotFound('karma record');
    if (row.karma_type === 'subtract') {
      throw new ApiError(
        'invalid_request',
        `This is a subtract record (${row.event}): it takes back the points of an item that was deleted, and is kept as the audit trail of that deletion. Subtract records cannot be deleted; only add records can.`,
        [{ field: 'karma_uuid', message: 'names a subtract (compensation) record, which cannot be deleted' }],
      );
    }
    await deleteKarma(trx, uuid);
    await addToUserKarma(trx, userUuid, -signed(row.karma_type, Number(row.points)));
  });
}

// Up to this many matches, a filtered page reads the matches through the filters' index and sorts them (a few ms from
// disk); past it, matches are common enough that walking the sort's index finds a page in few steps. The walk's cost
// also grows with the offset (it reads about offset / matches of the caller's records), which the count alone
// cannot weigh against the size of the scope: a deep page of a few thousand matches among many records still walks.
// One author has at most a few tens of thousands of records, so that worst case stays bounded.
const SORT_MATCHES_MAX = 1000;

/** Properties of GET /karma that sortby and filterby accept, mapped to columns. */
export const KARMA_WHITELIST: Whitelist = {
  uuid: { column: 'uuid', type: 'uuid' },
  // A closed set (rules and their compensations): a like picks among them, an index lookup, where a LIKE over the
  // column read every record of the caller (2 s from disk for a pattern that matches no event).
  event: { column: 'event', type: 'enum', values: KARMA_EVENTS },
  target_uuid: { column: 'target_uuid', type: 'uuid' },
  target_type: { column: 'target_type', type: 'enum', values: TARGET_TYPES },
  karma_type: { column: 'karma_type', type: 'enum', values: ['add', 'subtract'] },
  points: { column: 'points', type: 'integer' },
  created_at: { column: 'created_at', type: 'datetime' },
  updated_at: { column: 'updated_at', type: 'datetime' },
};

/** The caller's records: one page, the applied window and the exact total. */
export async function listKarma(
  ctx: Context,
  userUuid: string,
  query: Record<string, unknown>,
): Promise<{ data: Karma[]; count: { offset: number; limit: number; total: number } }> {
  const lq: ListQuery = parseListQuery(query, KARMA_WHITELIST, LIST_MAX_OFFSET);
  const count = { offset: lq.offset, limit: lq.limit };
  if (lq.filters.length === 0 || lq.uuids) {
    const [rows, total] = await Promise.all([
      listKarmaOfUser(ctx.readDb, userUuid, lq, lateRowsFor(ctx.dialect)),
      countKarmaOfUser(ctx.readDb, userUuid, lq),
    ]);
    return { data: rows.map(toKarma), count: { ...count, total } };
  }
  // Filtered: the exact count (an index lookup for the usual filters) comes first and chooses how the page is read.
  // Neither engine's statistics know how selective a filter is for one user: PostgreSQL too walked the sort's index
  // through all of bench_user's records for 2 matches (docs/reliability.md, "Resource limits, eleventh session").
  const total = await countKarmaOfUser(ctx.readDb, userUuid, lq);
  if (total <= lq.offset) return { data: [], count: { ...count, total } };
  const few = total <= SORT_MATCHES_MAX;
  const rows =
    few && ctx.dialect === 'postgres'
      ? await listFewKarmaOfUser(ctx.readDb, userUuid, lq)
      : await listKarmaOfUser(
          ctx.readDb,
          userUuid,
          lq,
          few ? { sortMatches: true } : lateRowsFor(ctx.dialect),
        );
  return { data: rows.map(toKarma), count: { ...count, total } };
}

/** Result of the invariant check: who differs, out of how many users and records. */
export interface KarmaCheck {
  users: number;
  records: number;
  mismatches: KarmaMismatch[];
}

/** Compares every user's stored total with the ledger sum (the invariant the CLI `check` verifies). */
export async function checkKarmaTotals(db: Db): Promise<KarmaCheck> {
  const mismatches = await findKarmaMismatches(db);
  const scope = await countKarmaScope(db);
  return { ...scope, mismatches };
}
