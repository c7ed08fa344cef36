import { Random } from './random.ts';

/** Common words of each seeded language, most frequent first; the long tail is made of generated words. */
const HEAD: Record<string, string[]> = {
  en: 'the of and to a in is it you that he was for on are with as I his they be at one have this from or had by hot word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find love music friends coffee morning city running run runs weekend summer travel photo'.split(
    ' ',
  ),
  de: 'der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus er hat dass sie nach wird bei einer um am sind noch wie einem über einen so zum war haben nur oder aber vor zur bis mehr durch man sehr heute Kaffee Freunde Musik Stadt laufen Sommer Reise Straße schön Grüße'.split(
    ' ',
  ),
  fr: 'de la le et les des en un du une que est pour qui dans par plus pas au sur ne se sont il avec ce à elle ou mais nous vous ils été aussi fait comme tout bien leur sans très être avoir café amis musique ville courir été voyage matin soleil déjà'.split(
    ' ',
  ),
};

/** Languages the world is written in, with their share of content. */
export const SEED_LANGUAGES: { code: string; weight: number }[] = [
  { code: 'en', weight: 0.6 },
  { code: 'de', weight: 0.25 },
  { code: 'fr', weight: 0.15 },
];

/** Hashtags used in the world, in several scripts and spellings. */
export const HASHTAGS = [
  'javascript',
  'typescript',
  'nodejs',
  'music',
  'travel',
  'food',
  'Café',
  'cafe',
  'photography',
  'running',
  'summer',
  'books',
  'coffee',
  'München',
  'Paris',
  'Berlin',
  'art',
  'design',
  'news',
  'sport',
  'fußball',
  'été',
  '日本語',
  'Москва',
  'science',
  'climate',
  'cats',
  'dogs',
  'garden',
  'cooking',
];

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ne',
  'ra',
  'to',
  'shi',
  'ven',
  'dor',
  'lin',
  'par',
  'que',
  'stra',
  'bel',
  'ion',
  'um',
  'ek',
  'tor',
  'ma',
  'zu',
];

/** A ranked vocabulary of `size` words for a language: real common words first, then generated ones. */
export function vocabulary(language: string, size: number, seed = 7): string[] {
  const head = HEAD[language] ?? HEAD.en ?? [];
  const words = [...head];
  const seen = new Set(words.map((w) => w.toLowerCase()));
  const random = new Random(seed + language.charCodeAt(0) * 31 + (language.charCodeAt(1) || 0));
  while (words.length < size) {
    let w = '';
    const n = random.int(2, 4);
    for (let i = 0; i < n; i++) w += random.pick(SYLLABLES);
    if (seen.has(w)) continue;
    seen.add(w);
    words.push(w);
  }
  return words.slice(0, size);
}
