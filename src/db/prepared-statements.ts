import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type pg from 'pg';

/** How many distinct statements one process prepares at most; later ones run unnamed, as before. */
export const MAX_PREPARED = 256;

/** Statements up to this many characters are point lookups and small writes: prepared outside transactions too. */
export const SHORT_STATEMENT = 200;

/**
 * A comment that marks a longer statement outside a transaction as one to prepare: a lookup by primary key whose
 * plan does not depend on its values (`select /* prepared *\/ ...`, through Kysely's `modifyFront(PREPARED)`).
 */
export const PREPARED_MARK = '/* prepared */';

/** PREPARED_MARK for a select's `modifyFront`. */
export const PREPARED = sql.raw(PREPARED_MARK);

// How a marked select starts (modifyFront puts the comment right after `select`).
const MARKED_SELECT = `select ${PREPARED_MARK}`;

// Texts seen once and not named yet, the oldest dropped first, so one-off SQL cannot grow it without end.
const MAX_SEEN = 4 * MAX_PREPARED;
const seen = new Set<string>();
const names = new Map<string, string>();

/**
 * The name a statement is prepared under: given the second time its text runs (a statement that runs once, such as
 * a migration's, takes no name), while fewer than MAX_PREPARED statements have one; undefined otherwise.
 */
export function preparedNameOf(text: string): string | undefined {
  const known = names.get(text);
  if (known !== undefined || names.size >= MAX_PREPARED) return known;
  if (!seen.has(text)) {
    // The oldest one-off text makes room: a full set would otherwise keep every later statement unnamed.
    if (seen.size >= MAX_SEEN) seen.delete(seen.values().next().value as string);
    seen.add(text);
    return undefined;
  }
  seen.delete(text);
  const name = `s${createHash('sha1').update(text).digest('base64url')}`;
  names.set(text, name);
  return name;
}

/**
 * Errors of a named statement that PostgreSQL will repeat for as long as the connection keeps it: the result type
 * changed under it (a column added or altered by a migration of another process: `cached plan must not change
 * result type`), or the server no longer has it. The connection then runs that text unnamed, and a transaction
 * that failed on it may run again (RetryingKysely).
 */
export function isStalePreparedStatement(err: unknown): boolean {
  return (
    typeof err === 'object' && err !== null && (err as { stalePrepared?: unknown }).stalePrepared === true
  );
}

function stale(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (e.code === '26000') return true;
  return e.code === '0A000' && /cached plan must not change result type/.test(String(e.message));
}

type Query = (...args: unknown[]) => unknown;
type TransactionStatus = { getTransactionStatus?: () => string | null };

/**
 * Makes `client` prepare (name) the statements of transactions and the short ones (docs/decisions.md, "Prepared
 * statements on PostgreSQL"). node-postgres sends every statement unnamed, so PostgreSQL parses and plans each one
 * afresh: planning was about 1 ms of the 3.3 ms of server time of a post. A named statement is parsed once per
 * connection, and after five runs PostgreSQL keeps a generic plan when it costs no more than the custom ones.
 * Transactions hold the write path's fixed shapes (primary-key lookups, inserts, counter updates); a short
 * statement is a point lookup (a token, a karma record). Searches and lists are long and run outside transactions:
 * a plan fitted to the actual words and filters matters more there than the planning it costs. Whether the
 * connection is inside a transaction is the server's own answer (the status of its last ReadyForQuery, which
 * node-postgres keeps), so savepoints, a failed BEGIN or a statement that opens a transaction are followed as the
 * server sees them.
 */
export function prepareStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as Query;
  const status = (client as unknown as TransactionStatus).getTransactionStatus?.bind(client);
  // 'T' in a transaction, 'E' in a failed one, 'I' idle (null before the first answer).
  const inTransaction = () => {
    const s = status?.();
    return s === 'T' || s === 'E';
  };
  // Texts whose named statement went stale on this connection: they run unnamed here from then on.
  const unnamed = new Set<string>();
  const runNamed = async (name: string, text: string, values: unknown[]) => {
    const outside = !inTransaction();
    try {
      return await query({ name, text, values });
    } catch (err) {
      if (!stale(err)) throw err;
      unnamed.add(text);
      if (outside) return query(text, values);
      throw Object.assign(err as object, { stalePrepared: true });
    }
  };
  const named: Query = (config, values, callback) => {
    if (
      typeof config === 'string' &&
      callback === undefined &&
      Array.isArray(values) &&
      values.length > 0 &&
      (config.length <= SHORT_STATEMENT || inTransaction() || config.startsWith(MARKED_SELECT)) &&
      !unnamed.has(config)
    ) {
      const name = preparedNameOf(config);
      if (name !== undefined) return runNamed(name, config, values);
    }
    return query(config, values, callback);
  };
  (client as unknown as { query: Query }).query = named;
}
