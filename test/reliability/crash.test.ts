// The CI form of the crash-durability run (test/reliability/crash-harness.ts; full run: `npm run test:crash`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialects } from '../helper.ts';
import { runCrashCycles } from './crash-harness.ts';

const CYCLES = Number(process.env.CRASH_CI_CYCLES ?? 3);

for (const dialect of testDialects()) {
  describe(`crash durability (${dialect.name})`, () => {
    it(`loses no acknowledged write and leaves none half-applied over ${CYCLES} SIGKILL cycles`, {
      timeout: 300_000,
    }, async () => {
      const report = await runCrashCycles(dialect, CYCLES);
      console.log(
        `# crash ${dialect.name}: ${report.cycles} cycles, acknowledged ${JSON.stringify(report.acknowledged)}, ${report.seconds} s`,
      );
      assert.ok(report.acknowledged.posts > 0, 'writes were acknowledged before the kills');
      assert.deepEqual(report.lost, [], 'acknowledged writes lost');
      assert.deepEqual(report.halfApplied, [], 'half-applied writes');
      assert.deepEqual(report.integrity, [], 'PRAGMA integrity_check');
      assert.deepEqual(report.checkFailures, [], 'npm run cli -- check');
    });
  });
}
