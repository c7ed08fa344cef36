// Writes the OpenAPI document the app generates, for validators and docs.
import { writeFileSync } from 'node:fs';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';

const out = process.argv[2] ?? 'openapi.json';
const config = loadConfig(
  {},
  { DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', ENABLED_OPERATIONS: ['all'] },
);
const { app } = await buildApp(config, { logger: false });
await app.ready();
writeFileSync(out, `${JSON.stringify(app.swagger(), null, 2)}\n`);
await app.close();
console.log(`wrote ${out}`);
