/**
 * `npm run bench`: every benchmark under bench/, one after another, each printing its figures
 * and ratios against a baseline measured in the same process. Names given run those only
 * (`npx tsx bench/run.ts startup kube-commands`, after `npm run build`).
 *
 * Each suite runs in a process of its own: one suite's heap (thousands of actions, a simulator
 * seeded with 10,000 namespaces) would otherwise slow the garbage collection of the next, and
 * the server measured would not be the one `tend server` runs.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const suites = [
  'graph',
  'startup',
  'exec',
  'events',
  'kube-sim',
  'kube-commands',
  'server-ingest',
  'stream',
  'cleanup',
  'cleanup-executor',
  'cleanup-property',
];

const chosen = process.argv.slice(2);
const unknown = chosen.filter((name) => !suites.includes(name));
if (unknown.length > 0) {
  console.error(`no benchmark named ${unknown.join(', ')}; there are: ${suites.join(', ')}`);
  process.exit(2);
}

let failed = 0;
for (const name of chosen.length > 0 ? chosen : suites) {
  const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  if (!existsSync(file)) continue;
  console.log(`\n== ${name} ==`);
  // execArgv carries the TypeScript loader this runner was started with (tsx).
  const child = spawn(process.execPath, [...process.execArgv, file], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) {
    console.log(`${name}: exited with ${code}`);
    failed++;
  }
}
process.exitCode = failed > 0 ? 1 : 0;
