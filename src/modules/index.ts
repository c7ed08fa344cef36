import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Context } from '../context.ts';
import healthRoutes from './health/health.routes.ts';

/** A feature module: its routes plugin and the bus subscribers it installs. */
export interface Module {
  name: string;
  routes?: (app: FastifyInstance, opts: { ctx: Context }) => Promise<void>;
  subscribe?: (ctx: Context) => void;
  /** Runs once when the app is built, after migrations (e.g. bootstrap clients). */
  start?: (ctx: Context, log: FastifyBaseLogger) => Promise<void>;
}

/** Every feature module, in registration order. Each module adds one line here. */
export const modules: Module[] = [{ name: 'health', routes: healthRoutes }];
