import { checkKarmaTotals } from '../../modules/karma/karma.service.ts';
import type { Command } from '../command.ts';

/** `check`: verifies that every user's karma total equals their ledger; exit code 1 on any difference. */
export const checkCommand: Command = {
  name: 'check',
  usage: 'check                        verify invariants (users.karma equals the karma ledger of every user)',
  async run(ctx) {
    const result = await checkKarmaTotals(ctx.db);
    for (const m of result.mismatches) {
      console.log(
        `karma mismatch: user ${m.uuid} (${m.username}) stored ${m.stored}, ledger ${m.ledger}, difference ${m.stored - m.ledger}`,
      );
    }
    if (result.mismatches.length > 0) {
      console.log(
        `check FAILED: ${result.mismatches.length} of ${result.users} users have a karma total that differs from their ledger (${result.records} records)`,
      );
      return 1;
    }
    console.log(`check OK: ${result.users} users, ${result.records} karma records, every total matches`);
    return 0;
  },
};
