import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { sql } from 'kysely';
import pg from 'pg';

// node-postgres's conversion of a bound value to its wire text, as its own queries apply it (not typed by @types/pg).
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as {
  prepareValue: (value: unknown) => unknown;
};

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

/**
 * A comment that ends a write whose outcome its caller does not read (no rows, no count): inside a grouped
 * transaction on PostgreSQL it may wait to be sent ahead of the transaction's next statement, in the same round trip
 * (src/db/pg-group-commit.ts, `deferred`). Its failure then fails that statement, or the commit, as its own would.
 * Elsewhere the statement runs at once, as any other.
 */
export const DEFERRED_MARK = '/* deferred */';

/** DEFERRED_MARK for a write's `modifyEnd`. */
export const DEFERRED = sql.raw(DEFERRED_MARK);

/** Whether a compiled statement may wait for the next one (DEFERRED_MARK). */
export function isDeferred(text: string): boolean {
  return text.endsWith(DEFERRED_MARK);
}

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

/**
 * Marks a query to be sent behind some statements in the same write, answered in the same round trip
 * (prefixedText). The mark is not SQL: a client that did not go through prepareStatements refuses the query rather
 * than run it without them.
 */
export function prefixMark(statements: readonly string[]): string {
  const key = statements.join(';\n');
  let mark = marks.get(key);
  if (mark === undefined) {
    mark = `@@prefix${prefixes.size}@@ `;
    marks.set(key, mark);
    prefixes.set(mark, statements);
  }
  return mark;
}

/** `text` to be sent behind the statements of `mark` (prefixMark). */
export function prefixedText(mark: string, text: string): string {
  return mark + text;
}

/** A statement sent ahead of another with values of its own (a deferred write), converted by sentValues. */
export interface AheadStatement {
  sql: string;
  values: readonly unknown[];
}

/**
 * A statement's values as node-postgres converts a query's own for the wire (its `prepareValue`). Done when a write
 * is deferred, so a value it cannot convert fails the statement that deferred it, before anything is queued.
 */
export function sentValues(parameters: readonly unknown[]): unknown[] {
  return parameters.map((v) => prepareValue(v));
}

/**
 * `text` to be sent behind `setup` (statements without values, as prefixMark's) and then `deferred` (statements with
 * values, whose outcome nobody reads), all in one write and one round trip. The mark names a one-time entry, taken
 * when the query is sent (or dropped by discardPipeline if it never is): a failure of a setup statement sets
 * failedAhead, one of a deferred statement does not (the setup, a savepoint, is then in place).
 */
export function pipelinedText(
  setup: readonly string[] | undefined,
  deferred: readonly AheadStatement[],
  text: string,
): string {
  const mark = `${MARK_START}:${nextPipeline++}@@ `;
  pipelines.set(mark, { setup: setup ?? [], deferred });
  return mark + text;
}

/** Drops the one-time entry of a pipelinedText whose query failed, if it was never sent. */
export function discardPipeline(text: string): void {
  if (!text.startsWith(MARK_START)) return;
  pipelines.delete(text.slice(0, text.indexOf('@@ ', MARK_START.length) + 3));
}

const marks = new Map<string, string>();
const prefixes = new Map<string, readonly string[]>();
// One-time entries of pipelinedText, removed when their query is sent (or refused).
const pipelines = new Map<string, Pipeline>();
let nextPipeline = 0;

/** What goes ahead of a query: statements without values, then statements with values. */
interface Pipeline {
  setup: readonly string[];
  deferred: readonly AheadStatement[];
}
// Every mark starts so; nothing else the application sends does.
const MARK_START = '@@prefix';

/** The parts of node-postgres's connection a query writes its messages with (not typed by @types/pg). */
interface PgConnection {
  parse(config: { text: string; name?: string }): void;
  bind(config: { portal?: string; statement?: string; values?: unknown[] }): void;
  execute(config: { portal?: string; rows?: number }): void;
  on(event: 'parseComplete', listener: () => void): void;
  off(event: 'parseComplete', listener: () => void): void;
  parsedStatements: Record<string, string | undefined>;
}

/** The parts of node-postgres's Query that PrefixedQuery builds on (not typed by @types/pg). */
interface PgQueryInternals {
  name?: string;
  prepare(connection: PgConnection): void;
  hasBeenParsed(connection: PgConnection): boolean;
  handleRowDescription(msg: unknown): void;
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: PgConnection): void;
  handleError(err: unknown, connection: PgConnection): void;
  handleReadyForQuery(connection: PgConnection): void;
}

const PgQuery = pg.Query as unknown as new (
  config: pg.QueryConfig & { callback?: unknown },
) => PgQueryInternals;

/**
 * Whether a query sent behind statements (prefixMark) failed before all of them had answered: one of them may not
 * have run, so whatever they were to set up (a savepoint) may be missing. Also true when the client failed the query
 * before sending it.
 */
export function failedAhead(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { failedAhead?: unknown }).failedAhead === true;
}

/** A statement sent ahead, its values already converted as node-postgres converts a query's. */
interface SentAhead {
  text: string;
  values?: unknown[];
}

/**
 * A query sent behind some statements without a Sync between them: one write, one ReadyForQuery, one round trip.
 * The server runs the statements first and skips the rest up to the Sync when one fails, so the query then fails
 * with that error (failedAhead when a setup statement is among those that did not answer). Their CommandComplete
 * messages are not the query's results; a deferred write returns no rows, and any it did return would be dropped.
 */
class PrefixedQuery extends PgQuery {
  readonly #prefix: readonly SentAhead[];
  readonly #setup: number;
  #unanswered: number;
  #parsedBefore = true;
  #parses = 0;
  readonly #countParse = () => {
    this.#parses++;
  };

  constructor(prefix: readonly SentAhead[], setup: number, config: pg.QueryConfig & { callback: unknown }) {
    super(config);
    this.#prefix = prefix;
    this.#setup = setup;
    this.#unanswered = prefix.length;
  }

  requiresPreparation(): boolean {
    return true;
  }

  override prepare(connection: PgConnection): void {
    this.#parsedBefore = !this.name || this.hasBeenParsed(connection);
    // node-postgres files the first ParseComplete, the prefix's, under the query's name: counted to tell whether the
    // query's own Parse went through.
    if (!this.#parsedBefore) connection.on('parseComplete', this.#countParse);
    for (const { text, values } of this.#prefix) {
      connection.parse({ text });
      connection.bind(values ? { values } : {});
      connection.execute({});
    }
    super.prepare(connection);
  }

  override handleRowDescription(msg: unknown): void {
    if (this.#unanswered === 0) super.handleRowDescription(msg);
  }

  override handleDataRow(msg: unknown): void {
    if (this.#unanswered === 0) super.handleDataRow(msg);
  }

  override handleCommandComplete(msg: unknown, connection: PgConnection): void {
    if (this.#unanswered > 0) {
      this.#unanswered--;
      return;
    }
    super.handleCommandComplete(msg, connection);
  }

  override handleReadyForQuery(connection: PgConnection): void {
    connection.off('parseComplete', this.#countParse);
    super.handleReadyForQuery(connection);
  }

  override handleError(err: unknown, connection: PgConnection): void {
    connection.off('parseComplete', this.#countParse);
    // The server skipped or refused the query's own Parse: it holds no statement of that name.
    if (!this.#parsedBefore && this.name && this.#parses <= this.#prefix.length)
      delete connection.parsedStatements[this.name];
    const answered = this.#prefix.length - this.#unanswered;
    if (answered < this.#setup && typeof err === 'object' && err !== null)
      Object.assign(err, { failedAhead: true });
    super.handleError(err, connection);
  }
}

/** What a PrefixedQuery sends ahead, the first `setup` of them statements without values (failedAhead's). */
interface Prefix {
  ahead: readonly SentAhead[];
  setup: number;
}

/** The statements a mark stands for: a constant prefix (prefixMark), or a one-time pipeline (pipelinedText), taken here. */
function prefixOf(mark: string): Prefix | undefined {
  const constant = prefixes.get(mark);
  if (constant !== undefined) return { ahead: constant.map((text) => ({ text })), setup: constant.length };
  const pipeline = pipelines.get(mark);
  if (pipeline === undefined) return undefined;
  pipelines.delete(mark);
  const deferred = pipeline.deferred.map((d) => ({ text: d.sql, values: [...d.values] }));
  return { ahead: [...pipeline.setup.map((text) => ({ text })), ...deferred], setup: pipeline.setup.length };
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
  /** Runs a query, behind `prefix` in its round trip when given. */
  const run = (config: pg.QueryConfig, prefix: Prefix | undefined) =>
    prefix === undefined
      ? query(config)
      : new Promise((resolve, reject) => {
          const callback = (err: unknown, result: unknown) => (err ? reject(err) : resolve(result));
          query(new PrefixedQuery(prefix.ahead, prefix.setup, { ...config, callback }));
        });
  const runNamed = async (name: string, text: string, values: unknown[], prefix?: Prefix) => {
    const outside = !prefix && !inTransaction();
    try {
      return await run({ name, text, values }, prefix);
    } catch (err) {
      if (!stale(err)) throw err;
      unnamed.add(text);
      if (outside) return query(text, values);
      throw Object.assign(err as object, { stalePrepared: true });
    }
  };
  const named: Query = (config, values, callback) => {
    let prefix: Prefix | undefined;
    if (typeof config === 'string' && config.startsWith(MARK_START)) {
      const end = config.indexOf('@@ ', MARK_START.length) + 3;
      prefix = prefixOf(config.slice(0, end));
      if (prefix === undefined || callback !== undefined) throw new Error('unknown statement prefix mark');
      config = config.slice(end);
    }
    if (
      typeof config === 'string' &&
      callback === undefined &&
      Array.isArray(values) &&
      values.length > 0 &&
      // A prefix opens a transaction or runs inside one.
      (config.length <= SHORT_STATEMENT || prefix || inTransaction() || config.startsWith(MARKED_SELECT)) &&
      !unnamed.has(config)
    ) {
      const name = preparedNameOf(config);
      if (name !== undefined) return runNamed(name, config, values, prefix);
    }
    if (prefix) return run({ text: config as string, values: values as unknown[] }, prefix);
    return query(config, values, callback);
  };
  (client as unknown as { query: Query }).query = named;
}
