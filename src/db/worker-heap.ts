import { setFlagsFromString } from 'node:v8';

let released = false;

/**
 * Lets the worker threads started after it keep their own `resourceLimits`. V8 sizes every isolate it creates from
 * the process's `--max-old-space-size`, `--max-semi-space-size` and `--max-heap-size` when they are set, over the
 * limits a Worker asks for: the API's own heap settings (src/server.ts) gave each reader thread the main thread's
 * 512 MB and 64 MB young generation instead of its 64 and 12 (docs/decisions.md, "a worker's heap limits"). The main
 * thread's heap was sized when it started and keeps its settings; only isolates created later read the flags. A
 * worker started without `resourceLimits` afterwards gets V8's default limits (sized from the machine's memory).
 */
export function releaseHeapFlagsForWorkers(): void {
  if (released) return;
  released = true;
  for (const flag of ['--max-old-space-size', '--max-semi-space-size', '--max-heap-size']) {
    // 0 is V8's "not set": the isolate's own constraints apply.
    setFlagsFromString(`${flag}=0`);
  }
}
