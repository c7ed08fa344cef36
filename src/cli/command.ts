import type { Context } from '../context.ts';

/** One CLI command: `npm run cli -- NAME args...`. */
export interface Command {
  name: string;
  usage: string;
  /** Runs with an open, migrated database; returns the process exit code. */
  run(ctx: Context, args: string[]): Promise<number>;
}

/** Value of `--flag VALUE` in args, or undefined. */
export function flagValue(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}
