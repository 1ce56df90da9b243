import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { slowFirst } from './sequencer.js';
import { repoRoot } from './helpers/project.js';

it('names test files that exist, each once', () => {
  expect(slowFirst.filter((file) => !existsSync(path.join(repoRoot, file)))).toEqual([]);
  expect(new Set(slowFirst).size).toBe(slowFirst.length);
});
