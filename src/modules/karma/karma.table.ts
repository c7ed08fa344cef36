/** Row of `karma`: one ledger record. */
export interface KarmaTable {
  uuid: string;
  user_uuid: string;
  event: string;
  /**
   * The rule that wrote the record (never shown; the daily cap counts by it, and an edit of `event` leaves it); on a
   * `subtract` record, the rule it compensates. NULL on records written before migration 0023: their event stands
   * for it until an edit pins it.
   */
  rule: string | null;
  target_uuid: string;
  target_type: string;
  karma_type: string;
  points: number;
  /** The item whose creation granted the record (never shown; used to compensate its deletion). */
  source_uuid: string | null;
  created_at: string;
  updated_at: string;
}
