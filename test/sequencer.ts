/**
 * The order test files start in. Vitest starts the files it ran before longest first, from its
 * results cache; a fresh clone (CI) has none, and Vitest then starts the largest files first, which
 * left the demo (two runs of `npm run demo`, three minutes, mostly waiting on its minute of
 * inactivity) to start eight minutes in and end the run alone. Files named here start first, in
 * this order, when the cache has no duration for them: the slowest files measured (a full run on
 * 2 cores, 4 workers; 5 since). A file missing from the list only starts later; nothing else depends on it.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const slowFirst: readonly string[] = [
  'test/e2e/demo.test.ts',
  'test/server/cleanup/service.postgres.test.ts',
  'test/server/cleanup/service.sqlite.test.ts',
  'test/adversarial/offline-replay.test.ts',
  'test/server/cleanup/restore-job.test.ts',
  'test/executor/executor.test.ts',
  'test/server/sign-in.test.ts',
  'test/executor/servers.test.ts',
  'test/executor/agent.test.ts',
  'test/stream/outbox.test.ts',
  'test/e2e/package.test.ts',
  'test/e2e/plugin-buckets.test.ts',
  'test/stream/faults.test.ts',
  'test/server/accessibility.test.ts',
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const cache = this.ctx.cache;
    const rank = (spec: TestSpecification): number => {
      const file = path.relative(this.ctx.config.root, spec.moduleId).split(path.sep).join('/');
      if (cache.getFileTestResults(`${spec.project.name}:${file}`)) return -1;
      return slowFirst.indexOf(file);
    };
    // Within each project (Vitest runs the projects' files one project after the other), the
    // listed files without a cached duration go first; the rest keep Vitest's order.
    const projects = [...new Set(sorted.map((spec) => spec.project.name))];
    return projects.flatMap((name) => {
      const own = sorted.filter((spec) => spec.project.name === name);
      const listed = own.filter((spec) => rank(spec) >= 0).sort((a, b) => rank(a) - rank(b));
      return [...listed, ...own.filter((spec) => rank(spec) < 0)];
    });
  }
}
