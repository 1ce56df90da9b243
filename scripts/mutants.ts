/**
 * Hand-written mutants of the cleanup's safety code, run against the tests that must kill them:
 * `npm run mutants [-- <list.json>] [--only id,id] [--report out.json]`. Each mutant replaces one
 * exact piece of a source file; the named test files then run (one vitest process at a time, on
 * the default Node line, stopping at the first failure). A failing run kills the mutant, a passing
 * one lets it survive. The file is restored after each mutant, on an error, and on Ctrl-C.
 * Not part of `npm test`: a run takes the better part of an hour.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync, closeSync } from 'node:fs';
import path from 'node:path';

interface Mutant {
  id: string;
  file: string;
  original: string;
  mutated: string;
  /** The test files that must kill it. */
  tests: string[];
  /** Only the tests whose name matches (vitest -t), to keep a run short. */
  filter?: string;
}

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args.splice(at, 2)[1] : undefined;
};
const only = option('--only')?.split(',');
const reportPath = option('--report');
/** Where each mutant's vitest output goes (`<dir>/<id>.log`), to see what killed it. */
const logDir = option('--logs');
if (logDir) mkdirSync(logDir, { recursive: true });
const timeoutMs = Number(option('--timeout') ?? 600) * 1000;
const listPath = path.resolve(args[0] ?? path.join(root, 'scripts/mutants/safety.json'));
const mutants = (JSON.parse(readFileSync(listPath, 'utf8')) as Mutant[]).filter(
  (m) => !only || only.includes(m.id),
);

/** The file a mutant changed and its original text, while a mutant is applied. */
let applied: { file: string; text: string } | undefined;
let child: ChildProcess | undefined;

function restore() {
  if (applied) writeFileSync(applied.file, applied.text);
  applied = undefined;
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (child?.pid) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    restore();
    console.error(`\n${signal}: the mutated file is restored`);
    process.exit(130);
  });
}
process.on('exit', restore);

/** Runs the test files; true when they pass (the mutant survives), false when they fail or time out. */
function testsPass(m: Mutant): Promise<{ pass: boolean; timedOut: boolean }> {
  return new Promise((resolve) => {
    const vitestArgs = ['run', ...m.tests, '--bail=1', ...(m.filter ? ['-t', m.filter] : [])];
    const log = logDir ? openSync(path.join(logDir, `${m.id}.log`), 'w') : 'ignore';
    child = spawn('bash', ['scripts/node-line.sh', 'run', 'default', 'npx', 'vitest', ...vitestArgs], {
      cwd: root,
      stdio: ['ignore', log, log],
      detached: true,
    });
    if (typeof log === 'number') closeSync(log);
    const timer = setTimeout(() => {
      if (child?.pid) process.kill(-child.pid, 'SIGKILL');
      resolve({ pass: false, timedOut: true });
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      child = undefined;
      resolve({ pass: code === 0, timedOut: false });
    });
  });
}

const results: { id: string; outcome: 'killed' | 'survived' | 'stale'; seconds: number }[] = [];
for (const m of mutants) {
  const file = path.join(root, m.file);
  const text = readFileSync(file, 'utf8');
  const at = text.indexOf(m.original);
  if (at < 0 || text.indexOf(m.original, at + 1) >= 0) {
    console.log(`stale     ${m.id}: its original text is ${at < 0 ? 'not' : 'more than once'} in ${m.file}`);
    results.push({ id: m.id, outcome: 'stale', seconds: 0 });
    continue;
  }
  const started = Date.now();
  applied = { file, text };
  writeFileSync(file, text.slice(0, at) + m.mutated + text.slice(at + m.original.length));
  let run: { pass: boolean; timedOut: boolean };
  try {
    run = await testsPass(m);
  } finally {
    restore();
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  const outcome = run.pass ? 'survived' : 'killed';
  results.push({ id: m.id, outcome, seconds });
  console.log(`${outcome.padEnd(9)} ${m.id} (${m.file}, ${seconds} s${run.timedOut ? ', timed out' : ''})`);
}

const judged = results.filter((r) => r.outcome !== 'stale');
const survived = judged.filter((r) => r.outcome === 'survived');
const ratio = judged.length === 0 ? 0 : survived.length / judged.length;
console.log(
  `\n${judged.length} mutants: ${judged.length - survived.length} killed, ${survived.length} survived (${(ratio * 100).toFixed(1)} %)` +
    (survived.length ? `; survivors: ${survived.map((r) => r.id).join(', ')}` : '') +
    (results.length > judged.length ? `; ${results.length - judged.length} stale` : ''),
);
if (reportPath) {
  writeFileSync(
    reportPath,
    JSON.stringify(
      { date: new Date().toISOString(), total: judged.length, survived: survived.length, results },
      null,
      2,
    ),
  );
}
process.exitCode = results.some((r) => r.outcome === 'stale') || ratio > 0.05 ? 1 : 0;
