// Writes docs/configuration.md from the configuration schema in src/config.ts (run: npm run docs:config).
import { writeFileSync } from 'node:fs';
import { variables } from '../src/config.ts';

/** The configuration reference as Markdown. */
export function configurationMarkdown(): string {
  const rows = Object.entries(variables).map(
    ([name, spec]) =>
      `| \`${name}\` | ${spec.default === '' ? '(unset)' : `\`${spec.default}\``} | ${spec.description} |`,
  );
  return [
    '# Configuration',
    '',
    'Generated from `src/config.ts` by `npm run docs:config`; a test fails when this page and the code disagree.',
    '',
    'Every setting is an environment variable with a default that works on one machine. A bad value stops the',
    'process at start with a message naming the variable.',
    '',
    '| variable | default | meaning |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

if (import.meta.main) {
  writeFileSync('docs/configuration.md', configurationMarkdown());
  console.log('wrote docs/configuration.md');
}
