import { normalizeTagName } from './normalize.ts';

/** Longest hashtag, in characters (code points). */
export const HASHTAG_MAX_LENGTH = 100;
/** At most this many distinct hashtags and mentions are taken from one text, so one post cannot flood the store. */
export const MAX_TAGS_PER_TEXT = 50;

// Links are cut out first: the `#fragment` of a URL is not a hashtag, the `@` in one is not a mention.
const URL_TOKEN = /(?:\b[a-z][a-z0-9+.-]*:\/\/|\bwww\.)\S*/giu;
// A tag starts a word: no letter, digit, mark, `_` or tag sign right before it (`a#b`, `&#38;`, `x/#y` are not tags).
const HASHTAG = /(?<![\p{L}\p{N}\p{M}_#@&/])#([\p{L}\p{N}\p{M}_]+)/gu;
const MENTION = /(?<![\p{L}\p{N}\p{M}_#@&/.])@([\p{L}\p{N}\p{M}_]+)/gu;
const ALL_DIGITS = /^\p{N}+$/u;
/** A tag name needs a letter or a digit: `#_` or `#___` names nothing. */
export const HAS_LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

function withoutUrls(text: string): string {
  return text.replace(URL_TOKEN, ' ');
}

/** A name found in a text: its spelling there and its normalized key. */
export interface FoundName {
  name: string;
  key: string;
}

/**
 * The hashtags of a text, first spelling per normalized key, in order of appearance: `#` at a word start, then
 * 1 to 100 letters, digits, combining marks or `_` of any script, with a letter or digit but not all digits, not
 * inside a URL.
 */
export function extractHashtags(text: string): FoundName[] {
  const out = new Map<string, FoundName>();
  for (const m of withoutUrls(text).matchAll(HASHTAG)) {
    const name = (m[1] as string).normalize('NFC');
    const length = [...name].length;
    if (length > HASHTAG_MAX_LENGTH || ALL_DIGITS.test(name) || !HAS_LETTER_OR_DIGIT.test(name)) continue;
    const key = normalizeTagName(name);
    if (key === '' || out.has(key)) continue;
    out.set(key, { name, key });
    if (out.size >= MAX_TAGS_PER_TEXT) break;
  }
  return [...out.values()];
}

/** The `@name` mentions of a text (at a word start, not inside a URL or an e-mail address), distinct ignoring case. */
export function extractMentions(text: string): string[] {
  const out = new Map<string, string>();
  for (const m of withoutUrls(text).matchAll(MENTION)) {
    const name = m[1] as string;
    if ([...name].length > 100) continue;
    const key = name.toLowerCase();
    if (!out.has(key)) out.set(key, name);
    if (out.size >= MAX_TAGS_PER_TEXT) break;
  }
  return [...out.values()];
}
