import { Kysely, type Transaction, type TransactionBuilder } from 'kysely';
import { isStalePreparedStatement } from './prepared-statements.ts';

/** PostgreSQL's SQLSTATE for a lock not granted within lock_timeout. */
export const LOCK_NOT_AVAILABLE = '55P03';

/**
 * PostgreSQL errors after which a transaction can run again as it was: deadlock, serialization failure, and the
 * lock timeout of a group-committed transaction (pg-group-commit.ts).
 */
const RETRYABLE = new Set(['40P01', '40001', LOCK_NOT_AVAILABLE]);
/** Runs of one transaction at most (the first and two retries). */
const ATTEMPTS = 3;

/**
 * Runs of one transaction that failed on a stale prepared statement, besides ATTEMPTS: each failure leaves that
 * statement unnamed on its connection, so a transaction of several `select *` texts after another process's
 * migration may meet a few in turn, on more than one pooled connection.
 */
const STALE_RUNS = 20;

function retryable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && RETRYABLE.has(String((err as { code?: unknown }).code));
}

/**
 * Kysely whose transactions run again when PostgreSQL aborts them to break a deadlock (docs/reliability.md,
 * "Deadlocks"): the server rolls back one of the two, and running it again after the other committed is what it
 * asks for. Every transaction of the API is a function of its inputs and the database (events run inside it), so a
 * second run is the same write. Until then a user deleted while writing made their own write answer 503. A
 * transaction that failed on a prepared statement gone stale (prepared-statements.ts) runs again the same way.
 */
export class RetryingKysely<DB> extends Kysely<DB> {
  override transaction(): TransactionBuilder<DB> {
    const builder = super.transaction();
    const execute = builder.execute.bind(builder);
    return Object.assign(builder, {
      execute: async <T>(callback: (trx: Transaction<DB>) => Promise<T>): Promise<T> => {
        let stale = 0;
        let attempt = 1;
        for (;;) {
          try {
            // A run after a deadlock or a lock timeout goes alone: an explicit access mode (the default one, so the
            // server's isolation level stays) keeps it out of the commit groups, whose other members' locks were
            // its trouble.
            if (attempt === 1) return await execute(callback);
            return await super.transaction().setAccessMode('read write').execute(callback);
          } catch (err) {
            if (isStalePreparedStatement(err) && ++stale <= STALE_RUNS) continue;
            if (attempt >= ATTEMPTS || !retryable(err)) throw err;
            // The other transaction is committing or waiting on the lock it won: give it a moment, a random one.
            await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10 * attempt));
            attempt++;
          }
        }
      },
    });
  }
}
