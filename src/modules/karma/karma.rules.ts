import { readFileSync } from 'node:fs';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { ConfigError } from '../../config.ts';

/** Names of the karma rules: the events that grant points. */
export const KARMA_RULE_NAMES = [
  'postCreated',
  'commentCreated',
  'mediaCreated',
  'networkCreated',
  'connectionConfirmed',
  'emotionReceived',
] as const;

/** One of the karma rule names. */
export type KarmaRuleName = (typeof KARMA_RULE_NAMES)[number];

/** Name of the compensating `subtract` record written when the source of a rule's record is deleted. */
export const COMPENSATION_EVENT: Record<KarmaRuleName, string> = {
  postCreated: 'postDeleted',
  commentCreated: 'commentDeleted',
  mediaCreated: 'mediaDeleted',
  networkCreated: 'networkDeleted',
  connectionConfirmed: 'connectionDeleted',
  emotionReceived: 'emotionRemoved',
};

/** Points of one rule and how many records per user and UTC day earn them (null: no cap). */
export interface KarmaRule {
  points: number;
  dailyCap: number | null;
}

/** Every rule, by name. */
export type KarmaRules = Record<KarmaRuleName, KarmaRule>;

/** Records per user, rule and UTC day that earn points unless the rules file says otherwise. */
export const DEFAULT_DAILY_CAP = 50;

const DEFAULT_POINTS: Record<KarmaRuleName, number> = {
  postCreated: 2,
  commentCreated: 1,
  mediaCreated: 1,
  networkCreated: 10,
  connectionConfirmed: 5,
  emotionReceived: 1,
};

const MAX_POINTS = 1_000_000;
const Cap = Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()]);
const RuleOverride = Type.Object(
  {
    points: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_POINTS })),
    daily_cap: Type.Optional(Cap),
  },
  { additionalProperties: false },
);

/** Shape of the KARMA_RULES file; every key is optional, missing ones keep the defaults. */
export const KarmaRulesFile = Type.Object(
  {
    daily_cap: Type.Optional(Cap),
    rules: Type.Optional(
      Type.Object(
        {
          postCreated: Type.Optional(RuleOverride),
          commentCreated: Type.Optional(RuleOverride),
          mediaCreated: Type.Optional(RuleOverride),
          networkCreated: Type.Optional(RuleOverride),
          connectionConfirmed: Type.Optional(RuleOverride),
          emotionReceived: Type.Optional(RuleOverride),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

interface RuleOverrideValue {
  points?: number;
  daily_cap?: number | null;
}
interface RulesFileValue {
  daily_cap?: number | null;
  rules?: Partial<Record<KarmaRuleName, RuleOverrideValue>>;
}

/** The rules with a file's overrides applied (no file: the defaults). */
export function buildRules(file: RulesFileValue = {}): KarmaRules {
  const cap = file.daily_cap === undefined ? DEFAULT_DAILY_CAP : file.daily_cap;
  const out = {} as KarmaRules;
  for (const name of KARMA_RULE_NAMES) {
    const o = file.rules?.[name] ?? {};
    out[name] = {
      points: o.points ?? DEFAULT_POINTS[name],
      dailyCap: o.daily_cap === undefined ? cap : o.daily_cap,
    };
  }
  return out;
}

/** Reads and validates the KARMA_RULES file; a bad file is a ConfigError naming the variable and the problem. */
export function loadKarmaRules(path: string | undefined): KarmaRules {
  if (!path) return buildRules();
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(
      `Invalid environment variable KARMA_RULES=${JSON.stringify(path)}: cannot read it as JSON (${(err as Error).message})`,
    );
  }
  if (!Value.Check(KarmaRulesFile, parsed)) {
    const problems = [...Value.Errors(KarmaRulesFile, parsed)]
      .filter((e) => e.keyword !== 'boolean' && e.keyword !== 'anyOf')
      .slice(0, 5)
      .map((e) => {
        const extra = (e.params as { additionalProperties?: string[] }).additionalProperties;
        const where = e.instancePath || '(root)';
        return extra ? `${where}: unknown key(s) ${extra.join(', ')}` : `${where}: ${e.message}`;
      });
    throw new ConfigError(
      `Invalid environment variable KARMA_RULES=${JSON.stringify(path)}: ${problems.join('; ')}. ` +
        `Expected {"daily_cap": N|null, "rules": {"<rule>": {"points": N, "daily_cap": N|null}}} with rules ${KARMA_RULE_NAMES.join(', ')}.`,
    );
  }
  return buildRules(parsed as RulesFileValue);
}

/** Every event name a record may carry, with the rule whose points bound it. */
export function ruleOfEvent(event: string): KarmaRuleName | undefined {
  for (const name of KARMA_RULE_NAMES) {
    if (name === event || COMPENSATION_EVENT[name] === event) return name;
  }
  return undefined;
}

/** The event names a record may carry: the rule names and their compensations. */
export const KARMA_EVENTS: readonly string[] = [
  ...KARMA_RULE_NAMES,
  ...KARMA_RULE_NAMES.map((n) => COMPENSATION_EVENT[n]),
];
