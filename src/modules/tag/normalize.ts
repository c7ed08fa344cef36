import { foldText } from '../../db/search-fold.ts';

/** Kinds of tag. */
export const TAG_TYPES = ['hashtag', 'emotion', 'mention'] as const;

/** One of the tag kinds. */
export type TagType = (typeof TAG_TYPES)[number];

/** The configured emotions users attach as reactions (DESIGN.md section 5). */
export const EMOTIONS = ['like', 'love', 'haha', 'wow', 'sad', 'angry'] as const;

/** One of the configured emotions. */
export type Emotion = (typeof EMOTIONS)[number];

/**
 * The normalized key of a tag name, unique per tag type: search's folding (foldText): NFKC (full-width and
 * ligature forms fold), lower case with `ß` as `ss` and final `ς` as `σ` (as full case folding does), diacritics
 * removed. `Café`, `cafe` and `CAFÉ` share the key `cafe`; `Straße` and `STRASSE` the key `strasse`. Search uses the
 * same function so that a query finds the tag whatever its spelling.
 */
export function normalizeTagName(name: string): string {
  return foldText(name);
}

/** A tag name as given by a client, without one leading `#` or `@` and surrounding blanks. */
export function stripTagPrefix(name: string): string {
  const trimmed = name.trim();
  return /^[#@]/.test(trimmed) ? trimmed.slice(1) : trimmed;
}
