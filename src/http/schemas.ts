import { Type } from 'typebox';

const UUID_OPTIONS = {
  format: 'uuid',
  maxLength: 36,
  examples: ['0190a1b2-3c4d-7e5f-8a6b-7c8d9e0f1a2b'],
} as const;

/** A uuid, as every module's params, bodies and responses declare one (any case accepted; the API returns lower case). */
export const UuidSchema = Type.String({ ...UUID_OPTIONS, description: 'A uuid.' });

/** The same uuid schema with a field-specific description. */
export function uuidSchema(description: string) {
  return Type.String({ ...UUID_OPTIONS, description });
}
