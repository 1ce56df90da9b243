import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { errorCodes } from '../src/errors.js';
import { repoRoot } from './helpers/project.js';

describe('the error code registry', () => {
  const doc = readFileSync(path.join(repoRoot, 'docs', 'errors.md'), 'utf8');
  const documented = [...doc.matchAll(/^\| `(TEND_[A-Z0-9_]+)` \| (\d+) \|/gm)].map(
    (m) => [m[1]!, Number(m[2])] as const,
  );

  it('documents every code with its exit code, and nothing else', () => {
    expect(Object.fromEntries(documented)).toEqual(errorCodes);
  });

  it('is alphabetised', () => {
    const codes = Object.keys(errorCodes);
    expect(codes).toEqual([...codes].sort());
  });
});
