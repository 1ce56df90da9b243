// `npm run image:check`: the container image's check (test/image/), apart from `npm test`
// because building the image takes minutes; CI runs it after the tests (.ci/run).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/image/**/*.check.ts'],
    pool: 'forks',
    testTimeout: 1_200_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
