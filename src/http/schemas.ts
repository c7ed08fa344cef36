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

/**
 * Pattern of text that has something to read: one character that is neither white space nor an invisible format
 * character (zero-width space, joiners, word joiner). A post of 5,000 spaces was accepted before.
 */
export const VISIBLE_TEXT = '[^\\s\\u200B-\\u200D\\u2060]';

/** Free text of 1 to `max` characters with at least one visible character (VISIBLE_TEXT). */
export function visibleTextSchema(max: number, description: string) {
  return Type.String({ minLength: 1, maxLength: max, pattern: VISIBLE_TEXT, description });
}
