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
 * Pattern of text that has something to read: one character that is neither white space nor one of the characters
 * that show nothing: zero-width space, joiners and word joiner, soft hyphen, direction marks and embeddings, the
 * byte-order mark, and the blank fillers of Hangul and Braille, used for names that look empty. A post of 5,000
 * spaces was accepted before.
 */
export const VISIBLE_TEXT =
  '[^\\s\\u00AD\\u115F\\u1160\\u200B-\\u200F\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u2069\\u2800\\u3164\\uFEFF\\uFFA0]';

/** Free text of 1 to `max` characters with at least one visible character (VISIBLE_TEXT). */
export function visibleTextSchema(max: number, description: string) {
  return Type.String({ minLength: 1, maxLength: max, pattern: VISIBLE_TEXT, description });
}

// The characters NAME_TEXT and SHOWN_TEXT refuse, as the body of a character class.
const UNSHOWN =
  '\\u0001-\\u001F\\u007F-\\u009F\\u00AD\\u180E\\u200B\\u2028-\\u202E\\u2060-\\u2064\\u2066-\\u2069\\uFEFF';

/**
 * Pattern of a name shown to others (a display name, a network's name): a visible character (VISIBLE_TEXT), and none
 * of the characters that make it show other than it reads: control characters and line or paragraph separators (NUL
 * is left to its own hook, which answers with its own message), the direction embeddings, overrides and isolates
 * (`\u202Eecila` shows as "alice" but no search for "alice" finds it), and the invisible soft hyphen, Mongolian
 * vowel separator, zero-width space, word joiner and byte-order mark that split a word a filter would catch. Joiners
 * and direction marks stay: scripts and emoji need them.
 */
export const NAME_TEXT = `^(?=[\\s\\S]*${VISIBLE_TEXT})[^${UNSHOWN}]*$`;

/** Pattern of a title shown to others, which may be empty: none of the characters NAME_TEXT refuses. */
export const SHOWN_TEXT = `^[^${UNSHOWN}]*$`;

/** A name of 1 to `max` characters shown to others (NAME_TEXT). */
export function nameTextSchema(max: number, description: string) {
  return Type.String({ minLength: 1, maxLength: max, pattern: NAME_TEXT, description });
}

/** A title of at most `max` characters shown to others, possibly empty (SHOWN_TEXT). */
export function shownTextSchema(max: number, description: string) {
  return Type.String({ maxLength: max, pattern: SHOWN_TEXT, description });
}

/**
 * JSON null in a body, clearing an optional field. Not `type: 'null'`: the validator coerces types (for query
 * strings and forms) and would take "" for null there, silently clearing a field where an empty text was refused.
 */
export const ClearValue = Type.Unsafe<null>({ const: null, description: 'null clears the field.' });
