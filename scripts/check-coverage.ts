// Reads the lcov file written by `npm run test:coverage`, prints line and branch coverage, and fails when overall
// branch coverage is under 90% or a file that must be fully covered (the access checks and the list-query engine)
// has an untaken branch. Usage: node scripts/check-coverage.ts [coverage/lcov.info]
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const OVERALL_BRANCH_MIN = 90;
const FULLY_COVERED = ['src/modules/auth/access.plugin.ts', 'src/http/list-query.ts'];

/** Coverage counts of one source file. */
interface FileCoverage {
  file: string;
  linesFound: number;
  linesHit: number;
  branchesFound: number;
  branchesHit: number;
  /** Lines with a branch that was never taken. */
  missedBranchLines: number[];
}

/** Parses lcov text into per-file counts. */
export function parseLcov(text: string, root = process.cwd()): FileCoverage[] {
  const files: FileCoverage[] = [];
  let current: FileCoverage | undefined;
  for (const line of text.split('\n')) {
    const [key, rest = ''] = line.split(/:(.*)/s) as [string, string?];
    switch (key) {
      case 'SF':
        current = {
          file: relative(root, resolve(root, rest)),
          linesFound: 0,
          linesHit: 0,
          branchesFound: 0,
          branchesHit: 0,
          missedBranchLines: [],
        };
        break;
      case 'LF':
        if (current) current.linesFound = Number(rest);
        break;
      case 'LH':
        if (current) current.linesHit = Number(rest);
        break;
      case 'BRF':
        if (current) current.branchesFound = Number(rest);
        break;
      case 'BRH':
        if (current) current.branchesHit = Number(rest);
        break;
      case 'BRDA': {
        const [lineNo, , , taken] = rest.split(',');
        if (current && (taken === '-' || taken === '0')) current.missedBranchLines.push(Number(lineNo));
        break;
      }
      case 'end_of_record':
        if (current) files.push(current);
        current = undefined;
        break;
    }
  }
  return files;
}

const pct = (hit: number, found: number) => (found === 0 ? 100 : (100 * hit) / found);

function main(): void {
  const path = process.argv[2] ?? 'coverage/lcov.info';
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    console.error(`No coverage file at ${path}: run \`npm run test:coverage\` first.`);
    process.exit(1);
  }
  const files = parseLcov(text).filter((f) => f.file.startsWith('src/'));
  if (files.length === 0) {
    console.error(`${path} lists no file under src/.`);
    process.exit(1);
  }
  const sum = (k: 'linesFound' | 'linesHit' | 'branchesFound' | 'branchesHit') =>
    files.reduce((n, f) => n + f[k], 0);
  const branches = pct(sum('branchesHit'), sum('branchesFound'));
  const lines = pct(sum('linesHit'), sum('linesFound'));
  const failures: string[] = [];

  console.log(`coverage of src/ (${files.length} files)`);
  console.log(`  lines    ${lines.toFixed(2)}% (${sum('linesHit')}/${sum('linesFound')})`);
  console.log(`  branches ${branches.toFixed(2)}% (${sum('branchesHit')}/${sum('branchesFound')})`);
  if (branches < OVERALL_BRANCH_MIN) {
    failures.push(`overall branch coverage ${branches.toFixed(2)}% is under ${OVERALL_BRANCH_MIN}%`);
  }
  for (const name of FULLY_COVERED) {
    const f = files.find((x) => x.file === name);
    if (!f) {
      failures.push(`${name} is not in the coverage report`);
      continue;
    }
    const b = pct(f.branchesHit, f.branchesFound);
    console.log(`  ${name}: branches ${b.toFixed(2)}% (${f.branchesHit}/${f.branchesFound})`);
    if (f.branchesHit < f.branchesFound) {
      failures.push(
        `${name}: ${b.toFixed(2)}% of branches (untaken on lines ${[...new Set(f.missedBranchLines)].join(', ')}); 100% required`,
      );
    }
  }
  const weakest = [...files]
    .filter((f) => f.branchesFound > 0)
    .sort((a, b) => pct(a.branchesHit, a.branchesFound) - pct(b.branchesHit, b.branchesFound))
    .slice(0, 10);
  console.log('  lowest branch coverage:');
  for (const f of weakest) {
    console.log(`    ${pct(f.branchesHit, f.branchesFound).toFixed(1).padStart(5)}%  ${f.file}`);
  }
  if (failures.length > 0) {
    for (const f of failures) console.error(`coverage check FAILED: ${f}`);
    process.exit(1);
  }
  console.log('coverage check passed');
}

if (import.meta.main) main();
