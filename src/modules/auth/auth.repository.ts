import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ClientTable, TokenTable } from './auth.table.ts';

/** The token row with what the checks need of its client and user. */
export async function findTokenForCheck(db: Db, tokenHash: string) {
  // The client and the user come from subqueries, each one primary-key lookup. Joined, PostgreSQL planned a merge
  // join that walked the users' primary key from its start up to the token's user: 37 ms for a user near the end of
  // 100,000, on every check after a write.
  const row = await db
    .selectFrom('tokens')
    .select((eb) => [
      'tokens.token_hash',
      'tokens.kind',
      'tokens.client_id',
      'tokens.user_uuid',
      'tokens.family_id',
      'tokens.expires_at',
      'tokens.revoked_at',
      eb
        .selectFrom('clients')
        .select('clients.disabled')
        .whereRef('clients.id', '=', 'tokens.client_id')
        .as('client_disabled'),
      eb.selectFrom('users').select('users.role').whereRef('users.uuid', '=', 'tokens.user_uuid').as('role'),
    ])
    .where('tokens.token_hash', '=', tokenHash)
    .executeTakeFirst();
  // A token outlives neither its client nor its user (foreign keys cascade); without its client it is not known,
  // as the join answered.
  return row && row.client_disabled !== null ? { ...row, client_disabled: row.client_disabled } : undefined;
}

/** Stores a token row (only its hash). */
export async function insertToken(db: Db, row: Insertable<TokenTable>): Promise<void> {
  await db.insertInto('tokens').values(row).execute();
}

/** A refresh token by hash. */
export async function findRefreshToken(db: Db, tokenHash: string) {
  return db
    .selectFrom('tokens')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('kind', '=', 'refresh')
    .executeTakeFirst();
}

/**
 * Marks a refresh token spent; returns false when another request spent it first, or revoked it since it was read
 * (a revocation that committed while this statement waited for the token's row).
 */
export async function markTokenUsed(db: Db, tokenHash: string, at: string): Promise<boolean> {
  const r = await db
    .updateTable('tokens')
    .set({ used_at: at })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * PostgreSQL: locks a user's row for their token writes until the transaction ends. A refresh takes it shared and a
 * revocation exclusively, so a revocation waits for a refresh that is committing new tokens of the same login (and
 * then revokes them: its UPDATE reads what committed meanwhile), and a refresh waits for a revocation (and then finds
 * its token revoked). Without it, a revocation's UPDATE never saw the tokens a concurrent refresh inserted.
 */
export async function lockUserForTokens(db: Db, userUuid: string, mode: 'refresh' | 'revoke'): Promise<void> {
  await db
    .selectFrom('users')
    .select('uuid')
    .where('uuid', '=', userUuid)
    .$call((q) => (mode === 'refresh' ? q.forShare() : q.forNoKeyUpdate()))
    .execute();
}

/**
 * The user's password hash as the transaction sees it, share-locked on PostgreSQL (`lock`): a password change
 * committing meanwhile is waited for, and one that comes later waits for the caller's commit.
 */
export async function findPasswordHashForTokens(
  db: Db,
  userUuid: string,
  lock: boolean,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .select('password_hash')
    .where('uuid', '=', userUuid)
    .$if(lock, (q) => q.forShare())
    .executeTakeFirst();
  return row?.password_hash;
}

// The unrevoked tokens whose column holds the value are revoked at `at` (a revoked one keeps its first time).
async function revokeWhere(
  db: Db,
  column: 'family_id' | 'token_hash' | 'user_uuid' | 'client_id',
  value: string,
  at: string,
): Promise<void> {
  await db
    .updateTable('tokens')
    .set({ revoked_at: at })
    .where(column, '=', value)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every token of a family (a refresh chain and its access tokens). */
export async function revokeTokenFamily(db: Db, familyId: string, at: string): Promise<void> {
  await revokeWhere(db, 'family_id', familyId, at);
}

/** Revokes one token. */
export async function revokeToken(db: Db, tokenHash: string, at: string): Promise<void> {
  await revokeWhere(db, 'token_hash', tokenHash, at);
}

/** Revokes every token of a user. */
export async function revokeUserTokens(db: Db, userUuid: string, at: string): Promise<void> {
  await revokeWhere(db, 'user_uuid', userUuid, at);
}

/** Revokes every token (access and refresh) a client issued that is not revoked yet. */
export async function revokeClientTokens(db: Db, clientId: string, at: string): Promise<void> {
  await revokeWhere(db, 'client_id', clientId, at);
}

/** A client by id. */
export async function findClientById(db: Db, id: string) {
  return db.selectFrom('clients').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Every client, oldest first. */
export async function listClients(db: Db) {
  return db.selectFrom('clients').selectAll().orderBy('created_at').orderBy('id').execute();
}

/** Whether any client exists (first start of an empty database). */
export async function hasAnyClient(db: Db): Promise<boolean> {
  return (await db.selectFrom('clients').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Creates a client, or updates its secret and flags when the id exists. */
export async function upsertClient(db: Db, row: Insertable<ClientTable>): Promise<void> {
  await db
    .insertInto('clients')
    .values(row)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        secret_hash: row.secret_hash,
        first_party: row.first_party ?? 0,
        disabled: row.disabled ?? 0,
        name: row.name,
      }),
    )
    .execute();
}

/** Enables or disables a client; returns whether it exists. */
export async function setClientDisabled(db: Db, id: string, disabled: boolean): Promise<boolean> {
  const r = await db
    .updateTable('clients')
    .set({ disabled: disabled ? 1 : 0 })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Any token row (access or refresh) by hash. */
export async function findTokenByHash(db: Db, tokenHash: string) {
  return db.selectFrom('tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Revokes every token of a user except one family (the session that asked). */
export async function revokeUserTokensExceptFamily(
  db: Db,
  userUuid: string,
  keepFamilyId: string,
  at: string,
): Promise<void> {
  await db
    .updateTable('tokens')
    .set({ revoked_at: at })
    .where('user_uuid', '=', userUuid)
    .where('family_id', '<>', keepFamilyId)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Inserts a client only when the table is empty, in one statement, so processes starting together on one
 * database create at most one; returns whether this call inserted it. Used on the embedded (SQLite) database only:
 * PostgreSQL would type the selected parameters as text.
 */
export async function insertClientIfNone(db: Db, row: Insertable<ClientTable>): Promise<boolean> {
  const r = await db
    .insertInto('clients')
    .columns(['id', 'name', 'secret_hash', 'first_party', 'disabled', 'created_at'])
    .expression(
      db
        .selectNoFrom((eb) => [
          eb.val(row.id).as('id'),
          eb.val(row.name).as('name'),
          eb.val(row.secret_hash).as('secret_hash'),
          eb.val(row.first_party ?? 0).as('first_party'),
          eb.val(row.disabled ?? 0).as('disabled'),
          eb.val(row.created_at).as('created_at'),
        ])
        .where((eb) => eb.not(eb.exists(db.selectFrom('clients').select('id')))),
    )
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

/**
 * Deletes up to `batch` tokens that expired before `cutoff`, oldest expiry first (the expires_at index); returns how
 * many went. Every expired token is refused anyway; a spent refresh token that still exists, presented again,
 * revokes its login, so one is kept until it expires, 30 days by default.
 */
export async function deleteExpiredTokens(db: Db, cutoff: string, batch: number): Promise<number> {
  const result = await db
    .deleteFrom('tokens')
    .where('token_hash', 'in', (eb) =>
      eb
        .selectFrom('tokens as t')
        .select('t.token_hash')
        .where('t.expires_at', '<', cutoff)
        .orderBy('t.expires_at')
        .limit(batch),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
