/**
 * Results of completed actions by version, under `.tend/cache/results/`, so that a Build, Test or
 * Run already done for its version is not done again. Written atomically.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Outputs } from './types.js';
import { writeFileAtomic } from '../state/files.js';

export interface StoredResult {
  version: string;
  outputs: Outputs;
  completedAt: string;
  exitCode?: number;
}

/** Results live per environment namespace (`scope`), except builds, which any environment reuses. */
function resultFile(tendDir: string, scope: string, ref: string): string {
  return path.join(tendDir, 'cache', 'results', scope, `${ref}.json`);
}

export function readResult(tendDir: string, scope: string, ref: string): StoredResult | undefined {
  try {
    return JSON.parse(readFileSync(resultFile(tendDir, scope, ref), 'utf8')) as StoredResult;
  } catch {
    return undefined;
  }
}

export function writeResult(tendDir: string, scope: string, ref: string, result: StoredResult): void {
  // A cache: after a crash a missing or torn result only means the action runs again.
  writeFileAtomic(resultFile(tendDir, scope, ref), JSON.stringify(result), 0o644, { durable: false });
}
