import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Outcome of reserving one login attempt. */
export interface Reservation {
  allowed: boolean;
  /** For each key reserved, in order, whether its counter is over the limit. */
  over: boolean[];
  /** For each key reserved, in order, seconds until its counter resets (at least 1). */
  resets: number[];
}

/**
 * Counts failed password grants per key in fixed one-minute windows. An attempt first reserves a slot on every key
 * (atomically, so parallel guesses cannot slip past the limit); a successful login gives its slot back, so only
 * failures count.
 */
export interface LoginLimiter {
  reserve(keys: string[]): Promise<Reservation>;
  refund(keys: string[]): Promise<void>;
}

/** The key of an account (`user:UUID`) or of a login as typed (`login:NAME`), hashed so Redis never holds logins. */
export function accountKey(account: string): string {
  return `acct:${createHash('sha256').update(account).digest('base64url')}`;
}

/** The key of a client address (already grouped, see addressKey). */
export function addressLimitKey(address: string): string {
  return `addr:${address}`;
}

const RESERVE_LUA = `
local out = {}
for i, key in ipairs(KEYS) do
  local current = redis.call('INCR', key)
  if current == 1 then redis.call('PEXPIRE', key, ARGV[1]) end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    redis.call('PEXPIRE', key, ARGV[1])
    ttl = tonumber(ARGV[1])
  end
  table.insert(out, current)
  table.insert(out, ttl)
end
return out
`;

const REFUND_LUA = `
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then redis.call('DECR', key) end
end
return 0
`;

type RedisWithLogin = Redis & {
  loginReserve(...args: (string | number)[]): Promise<number[]>;
  loginRefund(...args: (string | number)[]): Promise<number>;
};

function decide(counts: { current: number; ttlMs: number }[], limit: number): Reservation {
  const over = counts.map((c) => c.current > limit);
  const resets = counts.map((c) => Math.max(1, Math.ceil(c.ttlMs / 1000)));
  return { allowed: !over.includes(true), over, resets };
}

/** Counters in Redis, shared by every process on it; keys live under `prefix`. */
export function redisLoginLimiter(
  redis: Redis,
  limit: number,
  prefix: string,
  windowMs = 60_000,
): LoginLimiter {
  const r = redis as RedisWithLogin;
  if (typeof r.loginReserve !== 'function') {
    redis.defineCommand('loginReserve', { lua: RESERVE_LUA });
    redis.defineCommand('loginRefund', { lua: REFUND_LUA });
  }
  return {
    async reserve(keys) {
      const full = keys.map((k) => prefix + k);
      const res = await r.loginReserve(full.length, ...full, windowMs);
      const counts = full.map((_, i) => ({ current: Number(res[2 * i]), ttlMs: Number(res[2 * i + 1]) }));
      return decide(counts, limit);
    },
    async refund(keys) {
      const full = keys.map((k) => prefix + k);
      await r.loginRefund(full.length, ...full);
    },
  };
}

/** Counters in this process only (no REDIS_URL). */
export function memoryLoginLimiter(limit: number, windowMs = 60_000): LoginLimiter {
  const counters = new Map<string, { count: number; resetAt: number }>();
  const sweep = (now: number) => {
    for (const [k, v] of counters) if (v.resetAt <= now) counters.delete(k);
  };
  return {
    async reserve(keys) {
      const now = Date.now();
      if (counters.size > 10_000) sweep(now);
      const counts = keys.map((k) => {
        let c = counters.get(k);
        if (!c || c.resetAt <= now) {
          c = { count: 0, resetAt: now + windowMs };
          counters.set(k, c);
        }
        c.count++;
        return { current: c.count, ttlMs: c.resetAt - now };
      });
      return decide(counts, limit);
    },
    async refund(keys) {
      const now = Date.now();
      for (const k of keys) {
        const c = counters.get(k);
        if (c && c.resetAt > now && c.count > 0) c.count--;
      }
    },
  };
}
