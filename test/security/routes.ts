import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../src/config.ts';
import { modules } from '../../src/modules/index.ts';
import { startTestApp, type TestApp, type TestDialect } from '../helper.ts';

/** A route as the app declared it: method, Fastify url and the access config. */
export interface DeclaredRoute {
  method: string;
  url: string;
  access: string | undefined;
  adminOverride: boolean;
  operation: string | undefined;
}

let sink: DeclaredRoute[] | undefined;

// A module at the front of the registry that only watches route registrations: every module registered after it
// (all of them) is seen with its declared access config. It is wrapped with fastify-plugin so its hook sits on the
// root instance and sees the routes of every later (encapsulated) module.
const recorder = fp(async (app: FastifyInstance) => {
  app.addHook('onRoute', (route) => {
    const config = (route.config ?? {}) as Record<string, unknown>;
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      sink?.push({
        method: String(method),
        url: route.url,
        access: config.access as string | undefined,
        adminOverride: config.adminOverride === true,
        operation: config.operation as string | undefined,
      });
    }
  });
});

if (!modules.some((m) => m.name === 'security-route-recorder')) {
  modules.unshift({ name: 'security-route-recorder', routes: recorder });
}

/** Starts a test app and returns it with the routes its modules declared. */
export async function startRecordedApp(
  dialect: TestDialect,
  overrides: Partial<Config> = {},
): Promise<{ t: TestApp; declared: DeclaredRoute[] }> {
  const declared: DeclaredRoute[] = [];
  sink = declared;
  try {
    const t = await startTestApp(dialect, overrides);
    return { t, declared };
  } finally {
    sink = undefined;
  }
}

/**
 * Every method and path the app serves, read from Fastify's printed routing tree (the compressed radix tree:
 * a node's path is its ancestors' labels joined). Covers the routes registered before the modules too.
 */
export function servedRoutes(app: FastifyInstance): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] as string).length / 4;
    stack.length = depth;
    stack.push(m[2] as string);
    if (!m[3]) continue;
    const path = stack.join('');
    for (const method of m[3].split(',').map((s) => s.trim())) out.push({ method, path });
  }
  return out;
}
