/**
 * Prints the plain closing line `N passed, N failed` (and skipped) after Vitest's own summary,
 * the form CI systems read without knowing Vitest.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    const totals = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      let tests = 0;
      for (const test of module.children.allTests()) {
        tests++;
        const state = test.result().state;
        if (state === 'passed') totals.passed++;
        else if (state === 'failed') totals.failed++;
        else totals.skipped++;
      }
      // A file that failed to load (no tests, or an error outside them) counts as a failure too.
      if (module.state() === 'failed' && (tests === 0 || module.errors().length > 0)) totals.failed++;
    }
    totals.failed += unhandledErrors.length;
    const skipped = totals.skipped > 0 ? `, ${totals.skipped} skipped` : '';
    process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed${skipped}\n`);
  }
}
