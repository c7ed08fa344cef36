import { readFileSync } from 'node:fs';

/** One configuration variable: its default, meaning and parser. */
interface VariableSpec<T> {
  default: string | undefined;
  description: string;
  parse: (raw: string) => T;
  /** How a refused value is shown in the error (default: as given); secrets never are. */
  shown?: (raw: string) => string;
}

// The query parameters pg reads secrets from; their values are masked first, so an `@` in one is not taken for the
// end of the user and password.
const SECRET_PARAMS = 'password|sslpassword|passfile|sslkey';

/**
 * A URL fit to print: any user and password left out (up to the last `@`, so a `/`, `?` or raw `@` in a password
 * goes too; a query holding an `@` loses its host as well, which only over-hides), and the values of the query
 * parameters pg reads the user or secrets from shown as `***`.
 */
export function urlWithoutCredentials(url: string): string {
  return url
    .replace(new RegExp(`([?&](?:user|${SECRET_PARAMS})=)[^&#]*`, 'gi'), '$1***')
    .replace(/\/\/.*@/s, '//');
}

/**
 * A URL fit to record as a command to run again: the password (up to the last `@`) and the query parameters pg reads
 * secrets from shown as `***`; the user stays, since the command connects as that user.
 */
export function urlWithoutPassword(url: string): string {
  return url
    .replace(new RegExp(`([?&](?:${SECRET_PARAMS})=)[^&#]*`, 'gi'), '$1***')
    .replace(/\/\/([^:@/]*):.*@/s, '//$1:***@');
}

/** One argument as a POSIX shell reads it back: single-quoted unless it holds only safe characters. */
function shellQuoted(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** A command line fit to print and paste back: each URL without its password, each argument shell-quoted. */
export function argsWithoutCredentials(args: readonly string[]): string {
  return args.map((a) => shellQuoted(a.includes('://') ? urlWithoutPassword(a) : a)).join(' ');
}

/** A URL as an error shows it. */
const withoutCredentials = (raw: string): string => JSON.stringify(urlWithoutCredentials(raw));

/** Raised for a bad environment variable; the message names the variable. */
export class ConfigError extends Error {}

const int =
  (min: number, max: number) =>
  (raw: string): number => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be a whole number from ${min} to ${max}`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`must be a whole number from ${min} to ${max}`);
    return n;
  };

// 0 switches a limit off; anything else must be large enough to work.
const zeroOr =
  (min: number, max: number) =>
  (raw: string): number => {
    const message = `must be 0 or a whole number from ${min} to ${max}`;
    if (!/^\d+$/.test(raw.trim())) throw new Error(message);
    const n = Number(raw);
    if (n !== 0 && (n < min || n > max)) throw new Error(message);
    return n;
  };

const bool = (raw: string): boolean => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  throw new Error('must be true or false');
};

const text = (raw: string): string => raw;
const optional = (raw: string): string | undefined => (raw === '' ? undefined : raw);
const list = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A DATABASE_URL as given, when it names an engine this API runs on; throws saying which forms it takes. */
export const databaseUrl = (raw: string): string => {
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(raw)) {
    throw new Error(
      'must start with sqlite: (for example sqlite:./data/social.db or sqlite::memory:) or postgres://',
    );
  }
  return raw;
};

const redisUrl = (raw: string): string | undefined => {
  if (raw === '') return undefined;
  if (!/^rediss?:\/\//.test(raw)) throw new Error('must start with redis:// or rediss://');
  return raw;
};

const logLevel = (raw: string): string => {
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!levels.includes(raw)) throw new Error(`must be one of ${levels.join(', ')}`);
  return raw;
};

const synchronous = (raw: string): 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA' => {
  const v = raw.toUpperCase();
  if (v !== 'OFF' && v !== 'NORMAL' && v !== 'FULL' && v !== 'EXTRA') {
    throw new Error('must be OFF, NORMAL, FULL or EXTRA');
  }
  return v;
};

const bootstrapClient = (raw: string): { id: string; secret: string } | undefined => {
  if (raw === '') return undefined;
  const i = raw.indexOf(':');
  if (i < 1 || i === raw.length - 1) throw new Error('must be CLIENT_ID:CLIENT_SECRET');
  const id = raw.slice(0, i);
  const secret = raw.slice(i + 1);
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(id))
    throw new Error('client id may hold letters, digits, . _ - (1-100)');
  if (secret.length < 8) throw new Error('client secret must have at least 8 characters');
  return { id, secret };
};

/** Every environment variable the service reads, with its default and meaning (the docs are generated from this). */
export const variables = {
  HOST: { default: '127.0.0.1', description: 'Address the HTTP server listens on.', parse: text },
  PORT: { default: '3000', description: 'TCP port of the HTTP server.', parse: int(0, 65535) },
  DATABASE_URL: {
    default: 'sqlite:./data/social.db',
    description:
      'sqlite:PATH for the embedded database (sqlite::memory: for a throw-away one) or postgres://USER@HOST:PORT/DB.',
    parse: databaseUrl,
    shown: withoutCredentials,
  },
  REDIS_URL: {
    default: '',
    description:
      'redis://HOST:PORT. When set, rate-limit counters are shared across processes; unset keeps them in-process.',
    parse: redisUrl,
    shown: withoutCredentials,
  },
  REDIS_KEY_PREFIX: {
    default: 'social:',
    description:
      'Prefix of every Redis key the service writes (rate-limit and login-failure counters); give each deployment or test run its own.',
    parse: (raw: string): string => {
      if (!/^[A-Za-z0-9:._-]{0,64}$/.test(raw))
        throw new Error('may hold letters, digits, : . _ - (up to 64)');
      return raw;
    },
  },
  LOG_LEVEL: {
    default: 'info',
    description: 'pino log level (fatal, error, warn, info, debug, trace, silent).',
    parse: logLevel,
  },
  ENABLED_OPERATIONS: {
    default: '',
    description:
      'Comma list of operations that are disabled by default to switch on (tags.create, tags.update, tags.delete, tag-associations.create, tag-associations.update, tag-associations.delete), or all.',
    parse: list,
  },
  KARMA_RULES: {
    default: '',
    description: 'Path of a JSON file overriding the karma rules.',
    parse: optional,
  },
  RATE_LIMIT_PER_MINUTE: {
    default: '600',
    description:
      'Requests per minute per valid token (or per address without one); every client address also gets twice this, whatever tokens it sends.',
    // Up to 100 million: a benchmark on two cores sends one token over 1.6 million requests a minute.
    parse: int(1, 100_000_000),
  },
  TOKEN_REQUESTS_PER_MINUTE: {
    default: '60',
    description:
      'Requests to POST /oauth/token and /oauth/revoke together per minute per client address (bounds guest-token farming and client-secret guessing).',
    parse: int(1, 1_000_000),
  },
  REGISTRATIONS_PER_MINUTE: {
    default: '10',
    description:
      'Registrations (POST /users) per minute per client address: each hashes a password, on the threads logins use.',
    parse: int(1, 1_000_000),
  },
  PASSWORD_CHANGES_PER_MINUTE: {
    default: '10',
    description:
      'Password changes (POST /users/{uuid}/update with a password) per minute per user and per client address: each hashes a password, on the threads logins use.',
    parse: int(1, 1_000_000),
  },
  LOGIN_FAILURES_PER_MINUTE: {
    default: '10',
    description: 'Failed password grants per minute per account and per client address.',
    parse: int(1, 100_000),
  },
  PAGE_LIMIT_MAX: {
    default: '100',
    description:
      'Largest accepted `limit` on lists and searches; the default `limit` is 20, or this when smaller.',
    parse: int(1, 1000),
  },
  SEARCH_MAX_OFFSET: {
    default: '10000',
    description: 'Largest accepted offset on searches.',
    parse: int(0, 1_000_000),
  },
  MEDIA_DIR: {
    default: './data/media',
    description:
      'Folder where uploaded media files are stored; created at start when missing (readable by this account only), and the start stops when it cannot be written.',
    parse: text,
  },
  MEDIA_MAX_BYTES: {
    default: '10485760',
    description: 'Largest accepted media upload in bytes.',
    parse: int(1, 1 << 30),
  },
  MEDIA_USER_MAX_BYTES: {
    default: '1073741824',
    description:
      'Most bytes of media files one user may store in all (413 past it, until they delete some); 0: no limit. A bound per account, so one account cannot fill the disk every write needs.',
    parse: int(0, Number.MAX_SAFE_INTEGER),
  },
  REQUEST_TIMEOUT_SECONDS: {
    default: '120',
    description:
      "Longest time a request may take to arrive, headers and body, in seconds (Node's `requestTimeout`; its headers must arrive within 60 s, or this when less). Node checks every 30 s (a quarter of this when less), so a request is cut off up to that much later. A late one is answered 400 and its connection closed. 120 lets an upload of the default MEDIA_MAX_BYTES (10 MiB) arrive at 87 KB/s (0.7 Mbit/s); raise both together for larger uploads or slower links.",
    parse: int(1, 3600),
  },
  TRUST_PROXY: {
    default: 'false',
    description: 'Trust X-Forwarded-For from a proxy in front of the service (true/false).',
    parse: bool,
  },
  CORS_ORIGINS: {
    default: '',
    description: 'Comma list of origins allowed by CORS (empty: none).',
    parse: list,
  },
  BOOTSTRAP_CLIENT: {
    default: '',
    description: 'CLIENT_ID:CLIENT_SECRET of a first-party client created or updated at start.',
    parse: bootstrapClient,
    shown: () => '(not shown: it holds a secret)',
  },
  SQLITE_SYNCHRONOUS: {
    default: 'FULL',
    description:
      'SQLite synchronous mode; FULL makes acknowledged writes survive power loss (the WAL is flushed after each group commit, off the event loop, before anyone is answered; a commit is readable by other requests for the length of that flush first). EXTRA: SQLite flushes inside COMMIT on the event loop, so commits are readable only once durable (slower writes).',
    parse: synchronous,
  },
  SQLITE_READERS: {
    default: '2',
    description:
      'Worker threads, each with a read-only SQLite connection, that run searches and list pages off the event loop (0: all queries on the main thread; ignored on PostgreSQL and in-memory SQLite).',
    parse: int(0, 64),
  },
  SQLITE_READER_HEAP_MB: {
    default: '48',
    description:
      "JavaScript heap limit of each SQLite reader thread in MB (its old generation; the young generation is held to 12 MB). A read whose rows do not fit stops its thread and is answered 503; a new thread takes its place. At least 32: a reader's start-up alone fills about 14 MB of it.",
    parse: int(32, 4096),
  },
  SQLITE_READER_CACHE_MB: {
    default: '12',
    description:
      "SQLite page cache of each reader thread's connection in MB (SQLite's own default is 2). Searches look up the row of each ranked match; with the recent documents' pages cached they took a fifth to a third less time. 12 holds most of the recent window's pages of the 1,000,000-post world (about 9 MB of rows).",
    parse: int(1, 4096),
  },
  PG_READ_SLOTS: {
    default: '4',
    description:
      'PostgreSQL: searches, tag and association list pages and trending hashtags each process computes at once; the others wait their turn in arrival order, and one whose client has closed the connection meanwhile is not computed (0: no limit). Their rows are parsed and ranked on the event loop, so the number in flight bounds how long one turn of the loop takes: under 50 connections of uncached searches its delay p99 was 42-113 ms unbounded and 27-38 ms at 4, for about the same throughput (docs/decisions.md, thirty-second session). Ignored on SQLite, whose reader threads (SQLITE_READERS) run that work.',
    parse: int(0, 64),
  },
  SEARCH_CACHE_ITEMS: {
    default: '20000',
    description:
      "Items of search answers kept in each process's exact answer cache (an answer is reused only while nothing was committed since; 0: no cache). A request with `Cache-Control: no-cache` is always computed afresh.",
    parse: int(0, 1_000_000),
  },
  SEARCH_CACHE_MB: {
    default: '32',
    description:
      "Memory the search answer cache may hold in each process, in MB (estimated from the answers' text and fields); the least recently used answers go first when either this or SEARCH_CACHE_ITEMS is reached.",
    parse: int(1, 65_536),
  },
  READ_CACHE_ENTRIES: {
    default: '10000',
    description:
      'Items each of the seven exact read caches of each process may hold (token checks, single tags, tag list pages and counts, association list pages and counts, karma records; a list page counts its items plus one, every other entry one); an entry is reused only while nothing was committed since; 0: no cache.',
    parse: int(0, 1_000_000),
  },
  READ_CACHE_MB: {
    default: '8',
    description:
      'Memory each of the seven read caches (token checks, single tags, tag list pages and counts, association list pages and counts, karma records) may hold in each process, in MB (estimated); the least recently used entries go first when either this or READ_CACHE_ENTRIES is reached.',
    parse: int(1, 65_536),
  },
  HEAP_SEMI_SPACE_MB: {
    default: '32',
    description:
      "Largest V8 semi-space of each API process's main thread in MB (`--max-semi-space-size`; the young generation is two of them). V8's default lets it grow to 64 MB under load; 16 saves 32 MB more but tripled the collection time of uncached common-word searches. Applied by restarting the process image at start (same pid); 0, or the flag given in NODE_OPTIONS or on the command line: V8's own choice.",
    parse: int(0, 1024),
  },
  HEAP_LIMIT_MB: {
    default: '512',
    description:
      "Old-generation heap limit of each API process's main thread in MB (`--max-old-space-size`), applied like HEAP_SEMI_SPACE_MB. A limit below V8's default (about 4 GB) also makes V8 collect sooner: at 512 the old generation grows to about 1.35 times its live size between full collections instead of up to 4 times. A process whose live data passes the limit stops (out of memory); 0: V8's default.",
    parse: zeroOr(128, 65_536),
  },
  MALLOC_ARENA_MAX: {
    default: '2',
    description:
      "glibc's limit on malloc arenas (each thread that allocates may otherwise get its own, up to 8 per core, and keeps what it freed). Read by glibc at process start: when unset, the process restarts its image with this default (same pid); 0: glibc's default.",
    parse: int(0, 1024),
  },
  ACCESS_TOKEN_TTL_SECONDS: {
    default: '3600',
    description: 'Lifetime of access tokens.',
    parse: int(1, 86_400 * 30),
  },
  REFRESH_TOKEN_TTL_SECONDS: {
    default: '2592000',
    description: 'Lifetime of refresh tokens.',
    parse: int(1, 86_400 * 365),
  },
  TOKEN_PURGE_INTERVAL_SECONDS: {
    default: '3600',
    description:
      'How often each API process deletes expired tokens (a spent refresh token stays until it expires, so its reuse still revokes its login). 0: never, and the tokens table grows with every guest token, login and refresh.',
    parse: int(0, 86_400 * 7),
  },
  WORKERS: {
    default: '1',
    description:
      'Number of API processes started by `npm start` on one machine (1 with an in-memory SQLite database); a worker that fails at the start stops the server.',
    parse: int(1, 64),
  },
} satisfies Record<string, VariableSpec<unknown>>;

type Variables = typeof variables;

/** The validated configuration, one key per environment variable. */
export type Config = { [K in keyof Variables]: ReturnType<Variables[K]['parse']> };

/** Reads and validates the configuration; overrides win over the environment. Throws ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(variables) as [string, VariableSpec<unknown>][]) {
    if (name in overrides) {
      out[name] = overrides[name as keyof Config];
      continue;
    }
    const raw = env[name] ?? spec.default ?? '';
    try {
      out[name] = spec.parse(raw);
    } catch (err) {
      const value = spec.shown ? spec.shown(raw) : JSON.stringify(raw);
      throw new ConfigError(`Invalid environment variable ${name}=${value}: ${(err as Error).message}`);
    }
  }
  const config = out as Config;
  // `sqlite:` with no path is in memory too (connectDatabase).
  if (
    config.WORKERS > 1 &&
    (config.DATABASE_URL === 'sqlite::memory:' || config.DATABASE_URL === 'sqlite:')
  ) {
    throw new ConfigError(
      'Invalid environment variable WORKERS: an in-memory SQLite database lives in one process; give WORKERS=1, or DATABASE_URL a file or PostgreSQL',
    );
  }
  if (config.KARMA_RULES) {
    try {
      readFileSync(config.KARMA_RULES, 'utf8');
    } catch {
      throw new ConfigError(`Invalid environment variable KARMA_RULES: cannot read ${config.KARMA_RULES}`);
    }
  }
  return config;
}
