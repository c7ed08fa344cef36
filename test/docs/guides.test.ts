import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './support.ts';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Relative link targets of a Markdown file (http links and in-page anchors left out). */
function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = (m[1] as string).split('#')[0] as string;
    if (target === '' || /^[a-z]+:/.test(target)) continue;
    out.push(target);
  }
  return out;
}

const AREA_GUIDES = ['identity.md', 'content.md', 'search.md', 'tags.md', 'tag-associations.md', 'karma.md'];

describe('guides', () => {
  it('every relative link of README.md and docs/README.md points at an existing file', () => {
    for (const file of ['README.md', 'docs/README.md']) {
      for (const link of relativeLinks(read(file))) {
        assert.ok(existsSync(join(ROOT, dirname(file), link)), `${file} links ${link}, which does not exist`);
      }
    }
  });

  it('the index links one guide per area, the HTTP contract, configuration and deployment', () => {
    const links = relativeLinks(read('docs/README.md'));
    for (const guide of [...AREA_GUIDES, 'http.md', 'configuration.md', 'deployment.md']) {
      assert.ok(links.includes(guide), `docs/README.md links ${guide}`);
      assert.ok(read(`docs/${guide}`).length > 500, `docs/${guide} has content`);
    }
  });

  it('the guides of listed resources show every list operator', () => {
    for (const guide of ['http.md', 'tags.md', 'tag-associations.md', 'karma.md']) {
      const text = read(`docs/${guide}`);
      for (const op of ['eq', 'ne', 'gt', 'ge', 'lt', 'le', 'like']) {
        const shown = new RegExp(`filterby\\[[a-z_]+\\]\\[${op}\\]=`).test(text);
        assert.ok(shown, `docs/${guide} shows an example of filterby[…][${op}]`);
      }
    }
  });
});
