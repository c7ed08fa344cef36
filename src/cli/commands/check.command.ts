import { checkKarmaTotals } from '../../modules/karma/karma.service.ts';
import { checkTagCounts } from '../../modules/tag/tag.service.ts';
import { checkAssociationAudiences } from '../../modules/tag-association/tag-association.service.ts';
import type { Command } from '../command.ts';

/** How many mismatches of one invariant `check` lists at most (a healthy database has none). */
const LISTED = 1000;

/**
 * Prints each mismatch (at most LISTED were read) and, when there is any, the failure line given their count;
 * returns whether there was none.
 */
function report<T>(mismatches: T[], line: (m: T) => string, failed: (count: string) => string): boolean {
  for (const m of mismatches) console.log(line(m));
  if (mismatches.length === 0) return true;
  console.log(failed(`${mismatches.length >= LISTED ? 'at least ' : ''}${mismatches.length}`));
  return false;
}

/**
 * `check`: verifies that every user's karma total equals their ledger, that every tag association's copied audience
 * matches its target and that every tag's associations_count equals its associations; exit code 1 on any difference.
 */
export const checkCommand: Command = {
  name: 'check',
  usage:
    'check                        verify invariants (users.karma equals the karma ledger of every user; tag association audiences match their targets; tag counts match their associations)',
  async run(ctx) {
    const audiencesOk = report(
      await checkAssociationAudiences(ctx.db, LISTED),
      (m) =>
        `tag association audience mismatch: ${m.uuid} on ${m.target_type} ${m.target_uuid} stored (${m.audience}, ${m.audience_owner}, ${m.audience_other}), target gives (${m.want_audience}, ${m.want_owner}, ${m.want_other})`,
      (n) =>
        `check FAILED: ${n} tag associations have an audience that differs from their target's (repair: UPDATE tag_associations SET target_uuid = target_uuid recomputes a row)`,
    );
    const countsOk = report(
      await checkTagCounts(ctx.db, LISTED),
      (m) =>
        `tag count mismatch: ${m.tag_type} ${m.uuid} (${m.name}) stored ${m.stored}, associations ${m.actual}`,
      (n) =>
        `check FAILED: ${n} tags have an associations_count that differs from their associations (repair, with writes stopped: UPDATE tags SET associations_count = (SELECT count(*) FROM tag_associations a WHERE a.tag_uuid = tags.uuid) WHERE associations_count <> (SELECT count(*) FROM tag_associations a WHERE a.tag_uuid = tags.uuid))`,
    );
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
