import { checkKarmaTotals } from '../../modules/karma/karma.service.ts';
import { checkTagCounts } from '../../modules/tag/tag.service.ts';
import { checkAssociationAudiences } from '../../modules/tag-association/tag-association.service.ts';
import type { Command } from '../command.ts';

/**
 * `check`: verifies that every user's karma total equals their ledger, that every tag association's copied audience
 * matches its target and that every tag's associations_count equals its associations; exit code 1 on any difference.
 */
export const checkCommand: Command = {
  name: 'check',
  usage:
    'check                        verify invariants (users.karma equals the karma ledger of every user; tag association audiences match their targets; tag counts match their associations)',
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
    const counts = await checkTagCounts(ctx.db);
    for (const m of counts.mismatches) {
      console.log(
        `tag count mismatch: ${m.tag_type} ${m.uuid} (${m.name}) stored ${m.stored}, associations ${m.actual}`,
      );
    }
    const countsOk = counts.mismatches.length === 0;
    if (!countsOk) {
      console.log(
        `check FAILED: ${counts.capped ? 'at least ' : ''}${counts.mismatches.length} tags have an associations_count that differs from their associations (repair, with writes stopped: UPDATE tags SET associations_count = (SELECT count(*) FROM tag_associations a WHERE a.tag_uuid = tags.uuid) WHERE associations_count <> (SELECT count(*) FROM tag_associations a WHERE a.tag_uuid = tags.uuid))`,
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
    if (!audiencesOk || !countsOk) return 1;
    console.log(
      `check OK: ${result.users} users, ${result.records} karma records, every total matches; every tag association audience matches its target; every tag count matches its associations`,
    );
    return 0;
  },
};
