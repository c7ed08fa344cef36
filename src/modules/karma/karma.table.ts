/** Row of `karma`: one ledger record. */
export interface KarmaTable {
  uuid: string;
  user_uuid: string;
  event: string;
  target_uuid: string;
  target_type: string;
  karma_type: string;
  points: number;
  created_at: string;
  updated_at: string;
}
