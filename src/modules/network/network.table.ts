/** Row of `networks`. */
export interface NetworkTable {
  uuid: string;
  name: string;
  description: string | null;
  payment_id: number | null;
  user_uuid: string;
  created_at: string;
  updated_at: string;
}
