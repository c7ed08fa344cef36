import { argon2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { ApiError } from '../../http/errors.ts';

const argon2Async = promisify(argon2);

// OWASP's minimum for argon2id: m=19 MiB, t=2, p=1.
const PARAMS = { memory: 19_456, passes: 2, parallelism: 1, tagLength: 32 };

// argon2 runs on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise), as do file reads and
// SQLite's WAL flushes (src/db/wal-sync.ts), which every write waits for. A burst of logins must not take every
// thread for tens of milliseconds: hashes run at most this many at a time, leaving two threads to the rest.
const HASHING_THREADS = Math.max(1, (Number(process.env.UV_THREADPOOL_SIZE) || 4) - 2);
/**
 * How many password checks may wait for a hashing thread; one more is answered 503 `unavailable` at once. Each
 * waits some 25 ms per check ahead of it per thread, so a full queue is about a second of waiting; an unbounded one
 * let a flood of sign-ups make every login wait for it. A mutable object so tests can shrink it.
 */
export const hashingQueue = { maxWaiting: 64 };
let hashing = 0;
const waitingToHash: (() => void)[] = [];

async function derive(password: string, salt: Buffer, p: typeof PARAMS): Promise<Buffer> {
  if (hashing >= HASHING_THREADS) {
    if (waitingToHash.length >= hashingQueue.maxWaiting) {
      throw new ApiError(
        'unavailable',
        'Too many password checks are waiting; retry in a moment.',
        undefined,
        { 'retry-after': '1' },
      );
    }
    await new Promise<void>((resolve) => waitingToHash.push(resolve));
  } else hashing++;
  try {
    return await argon2Async('argon2id', { message: password, nonce: salt, ...p });
  } finally {
    // The slot passes straight to the next waiter, if any.
    const next = waitingToHash.shift();
    if (next) next();
    else hashing--;
  }
}

/**
 * The form a password is hashed in: NFKC (NIST SP 800-63B 5.1.1.2), so "ä" typed as one character or as "a" and a
 * combining mark (macOS sends the latter) is the same password.
 */
function normalForm(password: string): string {
  return password.normalize('NFKC');
}

/** Hashes a password, in its normal form, with argon2id into a PHC string. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(normalForm(password), salt, PARAMS);
  return `$argon2id$v=19$m=${PARAMS.memory},t=${PARAMS.passes},p=${PARAMS.parallelism}$${b64(salt)}$${b64(hash)}`;
}

/**
 * Checks a password against a PHC string; false for anything malformed. The normal form is tried first; a password
 * typed in another form is also tried as typed, as hashes made before passwords were normalized hold it so.
 */
export async function verifyPassword(password: string, phc: string): Promise<boolean> {
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(phc);
  if (!m) return false;
  const expected = Buffer.from(m[5] as string, 'base64');
  const params = {
    memory: Number(m[1]),
    passes: Number(m[2]),
    parallelism: Number(m[3]),
    tagLength: expected.length,
  };
  const salt = Buffer.from(m[4] as string, 'base64');
  const matches = async (form: string) => {
    const actual = await derive(form, salt, params);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  };
  const normal = normalForm(password);
  return (await matches(normal)) || (normal !== password && (await matches(password)));
}

// A hash of no password anyone knows, with the parameters of real ones, made without hashing: a dummy hashed on
// first use could be refused by a full queue, and a refused promise kept would answer every later unknown account
// at once, telling it apart from a wrong password.
const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
const DUMMY_PHC = `$argon2id$v=19$m=${PARAMS.memory},t=${PARAMS.passes},p=${PARAMS.parallelism}$${b64(randomBytes(16))}$${b64(randomBytes(PARAMS.tagLength))}`;

/** Spends the time of one verification, so an unknown account answers as slowly as a wrong password. */
export async function burnVerification(password: string): Promise<void> {
  await verifyPassword(password, DUMMY_PHC);
}
