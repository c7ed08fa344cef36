import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** Prometheus metrics at /metrics: request counts and latency histograms by route and status. */
async function metricsPlugin(app: FastifyInstance): Promise<void> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Counted in a plain map and handed to prom-client when scraped: its own increment hashes and validates the
  // labels on every request.
  const answered = new Map<
    string,
    { labels: { method: string; route: string; status: string }; n: number }
  >();
  new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, n } of answered.values()) this.inc(labels, n);
    },
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  // A callback hook, not an async one: one microtask less on every request.
  app.addHook('onResponse', (request, reply, done) => {
    // Unknown paths share one label, so scanners cannot blow up the label set.
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${route} ${reply.statusCode}`;
    let entry = answered.get(key);
    if (!entry) {
      entry = { labels: { method: request.method, route, status: String(reply.statusCode) }, n: 0 };
      answered.set(key, entry);
    }
    entry.n++;
    duration.observe(entry.labels, reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', { config: { access: 'none' }, schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}

export default fp(metricsPlugin, { name: 'metrics' });
