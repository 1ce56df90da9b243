/**
 * `--debug` prints an error's stack trace; the CLI bundle is minified (scripts/bundle.ts), and its
 * frames are printed as the lines of tend's sources they came from, through the bundle's source
 * map (src/cli/bundle-stack.ts). Through a real `bin/tend.js` process, and on a made-up frame.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sourceMappedStack } from '../../src/cli/bundle-stack.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterAll(() => removeProjects());

describe('the stack trace --debug prints', () => {
  it("names tend's source files and lines, not the minified bundle's", async () => {
    const root = makeProject({
      'tend.yml':
        'kind: Project\nname: p\ndefaultEnvironment: nope\nenvironments: [{ name: dev, defaultNamespace: p-dev }]\n',
    });
    const run = await runTend(['--debug', 'status'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('defaultEnvironment "nope" is not one of the environments');
    // The error is made where the configuration's problems become one TendError.
    expect(run.stderr).toMatch(/\n {4}at \S+ \(src\/config\/diagnostics\.ts:\d+:\d+\)\n/);
    expect(run.stderr).toMatch(/\(src\/commands\/status\.ts:\d+:\d+\)/);
    expect(run.stderr).not.toMatch(/tend\.cjs:\d/);
  });

  it('leaves the frames of a file without a source map as they are', () => {
    const stack = 'Error: x\n    at f (/nowhere/tend.cjs:2:10)\n    at g (node:internal/x:1:1)';
    expect(sourceMappedStack(stack)).toBe(stack);
  });
});
