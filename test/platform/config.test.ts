import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, variables } from '../../src/config.ts';

describe('configuration', () => {
  it('has a working default for every variable', () => {
    const config = loadConfig({});
    assert.equal(config.PORT, 3000);
    assert.equal(config.HOST, '127.0.0.1');
    assert.equal(config.DATABASE_URL, 'sqlite:./data/social.db');
    assert.equal(config.REDIS_URL, undefined);
    assert.deepEqual(config.ENABLED_OPERATIONS, []);
    assert.equal(config.PAGE_LIMIT_MAX, 100);
    assert.equal(config.SEARCH_MAX_OFFSET, 10000);
    assert.equal(config.SQLITE_SYNCHRONOUS, 'FULL');
    assert.equal(config.TRUST_PROXY, false);
    // Memory bounds (docs/deployment.md, "Memory"): on unless switched off.
    assert.equal(config.SQLITE_READER_HEAP_MB, 48);
    assert.equal(config.SQLITE_READER_CACHE_MB, 12);
    assert.equal(config.SEARCH_CACHE_MB, 32);
    assert.equal(config.READ_CACHE_MB, 8);
    assert.equal(config.HEAP_SEMI_SPACE_MB, 32);
    assert.equal(config.HEAP_LIMIT_MB, 512);
    assert.equal(config.MALLOC_ARENA_MAX, 2);
    for (const [name, spec] of Object.entries(variables)) assert.ok(spec.description.length > 10, name);
  });

  it('parses values from the environment', () => {
    const config = loadConfig({
      PORT: '8080',
      ENABLED_OPERATIONS: 'tags.create, tags.update',
      TRUST_PROXY: 'true',
      BOOTSTRAP_CLIENT: 'web:supersecret',
      REDIS_URL: 'redis://127.0.0.1:6379',
      RATE_LIMIT_PER_MINUTE: '100000000',
    });
    assert.equal(config.PORT, 8080);
    assert.deepEqual(config.ENABLED_OPERATIONS, ['tags.create', 'tags.update']);
    assert.equal(config.TRUST_PROXY, true);
    assert.deepEqual(config.BOOTSTRAP_CLIENT, { id: 'web', secret: 'supersecret' });
    assert.equal(config.REDIS_URL, 'redis://127.0.0.1:6379');
    // A benchmark's single token sends more than a million requests a minute on two cores.
    assert.equal(config.RATE_LIMIT_PER_MINUTE, 100_000_000);
  });

  const bad: [string, string][] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'http://x'],
    ['LOG_LEVEL', 'loud'],
    ['TRUST_PROXY', 'maybe'],
    ['BOOTSTRAP_CLIENT', 'no-colon'],
    ['BOOTSTRAP_CLIENT', 'id:short'],
    ['SQLITE_SYNCHRONOUS', 'SOMETIMES'],
    ['PAGE_LIMIT_MAX', '0'],
    ['SQLITE_READER_HEAP_MB', '8'],
    ['SQLITE_READER_HEAP_MB', '16'],
    ['SQLITE_READER_CACHE_MB', '0'],
    ['SEARCH_CACHE_MB', '0'],
    ['READ_CACHE_MB', 'lots'],
    ['HEAP_SEMI_SPACE_MB', '-1'],
    ['HEAP_LIMIT_MB', '1.5'],
    ['HEAP_LIMIT_MB', '64'],
    ['MALLOC_ARENA_MAX', 'two'],
    ['RATE_LIMIT_PER_MINUTE', '100000001'],
    ['KARMA_RULES', '/no/such/file.json'],
  ];
  it('never shows a password or secret of a refused value', () => {
    for (const [name, value, shown] of [
      ['DATABASE_URL', 'postgress://app:pw-secret@db/x', 'DATABASE_URL="postgress://db/x"'],
      ['REDIS_URL', 'valkey://:pw-secret@cache:6379', 'REDIS_URL="valkey://cache:6379"'],
      ['BOOTSTRAP_CLIENT', 'my@app:pw-secret', 'BOOTSTRAP_CLIENT=(not shown'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) =>
          err instanceof ConfigError && err.message.includes(shown) && !err.message.includes('pw-secret'),
      );
    }
  });

  it('refuses several workers on an in-memory SQLite database, naming WORKERS', () => {
    assert.throws(
      () => loadConfig({ WORKERS: '2', DATABASE_URL: 'sqlite::memory:' }),
      (err: unknown) => err instanceof ConfigError && err.message.includes('WORKERS'),
    );
    assert.equal(loadConfig({ WORKERS: '1', DATABASE_URL: 'sqlite::memory:' }).WORKERS, 1);
  });
  for (const [name, value] of bad) {
    it(`refuses ${name}=${value} with a message naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(name),
      );
    });
  }
});

describe('configuration reference', () => {
  it('docs/configuration.md matches the configuration schema', async () => {
    const { readFileSync } = await import('node:fs');
    const { configurationMarkdown } = await import('../../scripts/gen-config-docs.ts');
    assert.equal(
      readFileSync('docs/configuration.md', 'utf8'),
      configurationMarkdown(),
      'run npm run docs:config',
    );
  });
});
