import { checkKarmaTotals } from '../../modules/karma/karma.service.ts';
import { checkAssociationAudiences } from '../../modules/tag-association/tag-association.service.ts';
import type { Command } from '../command.ts';

/**
 * `check`: verifies that every user's karma total equals their ledger and that every tag association's copied
 * audience matches its target; exit code 1 on any difference.
 */
export const checkCommand: Command = {
  name: 'check',
  usage:
    'check                        verify invariants (users.karma equals the karma ledger of every user; tag association audiences match their targets)',
  async run(ctx) {
    const audiences = await checkAssociationAudiences(ctx.db);
    for (const m of audiences.mismatches) {
      console.log(
        `tag association audience mismatch: ${m.uuid} on ${m.target_type} ${m.target_uuid} stored (${m.audience}, ${m.audience_owner}, ${m.audience_other}), target gives (${m.want_audience}, ${m.want_owner}, ${m.want_other})`,
      );
    }
    const audiencesOk = audiences.mismatches.length === 0;
    if (!audiencesOk) {
      console.log(
        `check FAILED: ${audiences.capped ? 'at least ' : ''}${audiences.mismatches.length} tag associations have an audience that differs from their target's (repair: UPDATE tag_associations SET target_uuid = target_uuid recomputes a row)`,
      );
    }
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
    if (!audiencesOk) return 1;
    console.log(
      `check OK: ${result.users} users, ${result.records} karma records, every total matches; every tag association audience matches its target`,
    );
    return 0;
  },
};
