/**
 * Prints the plain closing line `N passed, N failed` (and skipped) after Vitest's own summary,
 * the form CI systems read without knowing Vitest.
 */
import type { Reporter, RunnerTask, RunnerTestFile } from 'vitest/node';

function count(tasks: RunnerTask[], totals: { passed: number; failed: number; skipped: number }): void {
  for (const task of tasks) {
    if (task.type === 'suite') count(task.tasks, totals);
    else if (task.result?.state === 'pass') totals.passed++;
    else if (task.result?.state === 'fail') totals.failed++;
    else totals.skipped++;
  }
}

export default class SummaryReporter implements Reporter {
  onFinished(files: RunnerTestFile[] = [], errors: unknown[] = []): void {
    const totals = { passed: 0, failed: 0, skipped: 0 };
    count(files, totals);
    // Files that failed to load count as failures too.
    totals.failed +=
      files.filter((f) => f.result?.state === 'fail' && f.tasks.length === 0).length + errors.length;
    const skipped = totals.skipped > 0 ? `, ${totals.skipped} skipped` : '';
    process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed${skipped}\n`);
  }
}
