import { Type } from 'typebox';

/** ISO 639-1 codes the service accepts for users and content (search picks its stemming rules from them). */
export const SUPPORTED_LANGUAGES = [
  'en',
  'de',
  'fr',
  'es',
  'it',
  'pt',
  'nl',
  'sv',
  'da',
  'no',
  'fi',
  'ru',
  'tr',
  'hu',
  'ro',
] as const;

/** One of the supported language codes. */
export type Language = (typeof SUPPORTED_LANGUAGES)[number];

/** Whether a string is a supported language code. */
export function isSupportedLanguage(value: string): value is Language {
  return (SUPPORTED_LANGUAGES as readonly string[]).includes(value);
}

/** Schema of a `language` field: a plain string enum, so a bad value gets one clear "must be one of" message. */
export const languageSchema = Type.Unsafe<Language>({
  type: 'string',
  enum: [...SUPPORTED_LANGUAGES],
  description: 'ISO 639-1 language code',
});
