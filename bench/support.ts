/** Shared pieces of the benchmarks: timing, figures, temporary projects. */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The mean of the middle half of the values (the interquartile mean): robust to outliers like the
 * median, and finer than whole values when the samples are rounded (a duration in whole ms).
 */
export function interquartileMean(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.slice(Math.floor(sorted.length / 4), Math.ceil((sorted.length * 3) / 4));
  return middle.reduce((sum, v) => sum + v, 0) / middle.length;
}

/** The nearest-rank percentile: the smallest value with at least p% of the values at or below it. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * The CPU time (user + system, ms) of every child this process has waited for, and their waited-for
 * children, so far: cutime + cstime of /proc/self/stat, in clock ticks of 10 ms (Linux's USER_HZ).
 * The difference across one spawnSync is that command's CPU time, whatever it started and waited
 * for included (a `kubectl kustomize` tend ran). Node reports no child's resource usage itself;
 * undefined where there is no /proc.
 */
export function childrenCpuMs(): number | undefined {
  let stat: string;
  try {
    stat = readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return undefined;
  }
  // The fields after the command name (which may hold spaces), from field 3 (state) on.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100;
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / ticksPerSecond;
}

/** The load averages over 1, 5 and 15 minutes, for the figures of a shared machine. */
export function loadAverage(): string {
  return os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(', ');
}

export async function timeIt(fn: () => Promise<unknown> | unknown): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Prints one figure: name, value with unit, target (if any) and whether it is met. */
export function figure(
  name: string,
  value: number,
  unit: string,
  target?: { max?: number; min?: number },
): void {
  let verdict = '';
  if (target?.max !== undefined)
    verdict =
      value <= target.max
        ? `  (target ≤ ${target.max} ${unit}: met)`
        : `  (target ≤ ${target.max} ${unit}: NOT met)`;
  if (target?.min !== undefined)
    verdict =
      value >= target.min
        ? `  (target ≥ ${target.min} ${unit}: met)`
        : `  (target ≥ ${target.min} ${unit}: NOT met)`;
  const shown = value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(2) : value.toFixed(4);
  console.log(`  ${name.padEnd(58)} ${shown.padStart(10)} ${unit}${verdict}`);
}

/** Prints value / baseline; with a target, whether the ratio is within it. */
export function ratio(
  name: string,
  value: number,
  baseline: number,
  baselineName: string,
  target?: { max: number },
): void {
  const times = value / baseline;
  const verdict = target
    ? `  (target ≤ ${target.max}× ${baselineName}: ${times <= target.max ? 'met' : 'NOT met'})`
    : '';
  console.log(`  ${name.padEnd(58)} ${times.toFixed(2).padStart(10)} × ${baselineName}${verdict}`);
}

export function tempProject(files: Record<string, string>): { root: string; remove(): void } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tend-bench-'));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/**
 * A project of `builds` exec Builds and `tests` exec Tests, each running `echo built <i>` /
 * `echo tested <i>`, or `program` without arguments when given (test i depends on build i when
 * there is one), for the exec and the cached re-run benchmarks. `tend test` runs them all.
 */
export function execProjectFiles(builds: number, tests: number, program?: string): Record<string, string> {
  const command = (what: string, i: number) =>
    program === undefined ? `[echo, ${what} ${i}]` : `[${JSON.stringify(program)}]`;
  const docs = [
    'kind: Project\nname: bench\ndefaultEnvironment: dev\n' +
      'environments: [{ name: dev, defaultNamespace: bench-dev }]\nproviders: [{ name: exec }]\n',
  ];
  for (let i = 0; i < builds; i++) {
    docs.push(`kind: Build\ntype: exec\nname: b${i}\nspec: { command: ${command('built', i)} }\n`);
  }
  for (let i = 0; i < tests; i++) {
    const dep = i < builds ? `dependencies: [build.b${i}]\n` : '';
    docs.push(`kind: Test\ntype: exec\nname: t${i}\n${dep}spec: { command: ${command('tested', i)} }\n`);
  }
  return { 'tend.yml': docs.join('---\n') };
}
