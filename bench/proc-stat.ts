// CPU time from Linux's /proc/PID/stat and /proc/PID/task/TID/stat (proc(5)), for bench/run.ts and
// bench/reader-handoff.ts.

/** sysconf(_SC_CLK_TCK): 100 on every Linux Node runs on. */
export const CLOCK_TICKS = 100;

/** User plus system time, in clock ticks, of a stat file's text. */
export function statTicks(stat: string): number {
  // The fields after the command name, which is in parentheses and may hold spaces and parentheses: utime and stime
  // are the 12th and 13th of them (fields 14 and 15 of proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}
