import { checkFriendships } from '../../modules/connection/connection.service.ts';
import { checkKarmaTotals } from '../../modules/karma/karma.service.ts';
import { checkSearchIndex } from '../../modules/search/search.service.ts';
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
 * matches its target, that every tag's associations_count equals its associations, that the friends table matches
 * the confirmed connections and that every search document says who may find it as its item does; exit code 1 on
 * any difference.
 */
export const checkCommand: Command = {
  name: 'check',
  usage:
    'check                        verify invariants (users.karma equals the karma ledger of every user; tag association audiences match their targets; tag counts match their associations; friends match confirmed connections; search documents match their items)',
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
    const friendsOk = report(
      await checkFriendships(ctx.db, LISTED),
      (m) => `friendship mismatch: ${m.user_uuid} -> ${m.friend_uuid}: ${m.problem}`,
      (n) =>
        `check FAILED: ${n} friendships differ between the friends table and the confirmed connections (visibility reads the friends table; repair: delete the connection from either side and befriend again)`,
    );
    const indexOk = report(
      await checkSearchIndex(ctx.db, LISTED),
      (m) => `search index mismatch: ${m.kind} ${m.uuid}: ${m.problem}`,
      (n) =>
        `check FAILED: ${n} search documents differ from their items (repair: npm run cli -- search reindex)`,
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
    if (!audiencesOk || !countsOk || !friendsOk || !indexOk) return 1;
    console.log(
      `check OK: ${result.users} users, ${result.records} karma records, every total matches; every tag association audience matches its target; every tag count matches its associations; every friendship matches its connection; every search document matches its item`,
    );
    return 0;
  },
};
