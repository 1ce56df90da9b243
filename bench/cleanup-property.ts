/**
 * The planner's property check at scale (issue 11): random snapshots (ownership, roles, uids,
 * labels, activity, keep-alive, protection, running sessions, complete/partial/stale/missing
 * inventories, dead executors, clocks across DST changes), each planned as a planning pass and as
 * "clean up now", and checked by `checkPlan`: no `due` decision may break an invariant. Prints
 * the number of cases run (at least 100,000; `TEND_BENCH_PROPERTY_RUNS` sets it) and the due
 * decisions among them, so a generator that never reaches `due` shows.
 */
import fc from 'fast-check';
import { checkPlan } from '../src/server/cleanup/planner/check.js';
import { plan } from '../src/server/cleanup/planner/plan.js';
import { randomCase } from '../test/server/cleanup/snapshots.js';
import { figure } from './support.js';

const runs = Number(process.env.TEND_BENCH_PROPERTY_RUNS ?? 100_000);

export async function run(): Promise<void> {
  let cases = 0;
  let due = 0;
  let decisions = 0;
  const started = performance.now();
  const result = fc.check(
    fc.property(randomCase, ({ snapshot, now, settings }) => {
      cases++;
      const pass = plan(snapshot, now, settings);
      decisions += pass.decisions.length;
      due += pass.newJobs.length;
      const now2 = plan(snapshot, now, settings, { mode: 'now' });
      const violations = [
        ...checkPlan(snapshot, now, settings, pass),
        ...checkPlan(snapshot, now, settings, now2, 'now'),
      ];
      return violations.length === 0;
    }),
    { numRuns: runs },
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  random cases checked: ${cases.toLocaleString('en')} (decisions ${decisions.toLocaleString('en')}, new jobs ${due.toLocaleString('en')})`,
  );
  figure('property cases run', cases, 'cases', { min: 100_000 });
  figure('property cases per second', cases / seconds, 'cases/s');
  if (result.failed) {
    console.log(
      `  COUNTEREXAMPLE after ${result.numRuns} runs (seed ${result.seed}, path ${result.counterexamplePath}):`,
    );
    console.log(fc.stringify(result.counterexample));
    process.exitCode = 1;
  } else {
    console.log('  no due decision broke an invariant');
  }
}

await run();
