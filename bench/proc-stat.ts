// CPU time from Linux's /proc/PID/stat and /proc/PID/task/TID/stat (proc(5)), for bench/run.ts and
// bench/reader-handoff.ts.
import { readdirSync, readFileSync } from 'node:fs';

/** sysconf(_SC_CLK_TCK): 100 on every Linux Node runs on. */
export const CLOCK_TICKS = 100;

/** User plus system time, in clock ticks, of a stat file's text. */
export function statTicks(stat: string): number {
  // The fields after the command name, which is in parentheses and may hold spaces and parentheses: utime and stime
  // are the 12th and 13th of them (fields 14 and 15 of proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * CPU time, in seconds, of every process on this machine named `postgres` (the postmaster, its backends and its
 * background workers; another cluster here counts too), or NaN where there is none or /proc cannot be read.
 */
export function postgresCpuSeconds(): number {
  let ticks = 0;
  let found = false;
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return Number.NaN;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      ticks += statTicks(stat);
      found = true;
    } catch {
      // the process ended between the listing and the read
    }
  }
  // None found: the server runs elsewhere (or in another PID namespace), where its CPU cannot be read.
  return found ? ticks / CLOCK_TICKS : Number.NaN;
}
