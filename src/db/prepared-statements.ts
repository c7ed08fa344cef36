import { createHash } from 'node:crypto';
import type pg from 'pg';

/** How many distinct statements one process prepares at most; later ones run unnamed, as before. */
export const MAX_PREPARED = 256;

/** Statements up to this many characters are point lookups and small writes: prepared outside transactions too. */
export const SHORT_STATEMENT = 200;

const names = new Map<string, string>();

/** The name a statement is prepared under, or undefined once MAX_PREPARED other statements took their names. */
export function preparedNameOf(text: string): string | undefined {
  const known = names.get(text);
  if (known !== undefined || names.size >= MAX_PREPARED) return known;
  const name = `s${createHash('sha1').update(text).digest('base64url')}`;
  names.set(text, name);
  return name;
}

type Query = (...args: unknown[]) => unknown;

/**
 * Makes `client` prepare (name) the statements of transactions and the short ones (docs/decisions.md, "Prepared
 * statements on PostgreSQL"). node-postgres sends every statement unnamed, so PostgreSQL parses and plans each one
 * afresh: planning was about 1 ms of the 3.3 ms of server time of a post. A named statement is parsed once per
 * connection, and after five runs PostgreSQL keeps a generic plan when it costs no more than the custom ones.
 * Transactions hold the write path's fixed shapes (primary-key lookups, inserts, counter updates); a short
 * statement is a point lookup (a token, a karma record). Searches and lists are long and run outside transactions:
 * a plan fitted to the actual words and filters matters more there than the planning it costs.
 */
export function prepareStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as Query;
  let inTransaction = false;
  const named: Query = (config, values, callback) => {
    if (typeof config === 'string') {
      const command = config.slice(0, 17).toLowerCase();
      if (command.startsWith('begin') || command.startsWith('start transaction')) inTransaction = true;
      else if (command.startsWith('commit') || command.startsWith('rollback')) inTransaction = false;
      else if (
        (inTransaction || config.length <= SHORT_STATEMENT) &&
        Array.isArray(values) &&
        values.length > 0
      ) {
        const name = preparedNameOf(config);
        if (name !== undefined) return query({ name, text: config, values }, callback);
      }
    }
    return query(config, values, callback);
  };
  (client as unknown as { query: Query }).query = named;
}
