/**
 * Garden's `local.*` keys tend does not have: `local.artifactsPath` (the directory Garden copies a
 * Test's or Run's `artifacts` into; tend copies none) is the error at its line, saying why.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

describe("Garden's local.artifactsPath", () => {
  it('is an error at its line: tend collects no artifacts; read as `|| …` it gives the fallback', async () => {
    const root = makeProject({
      'project.garden.yml':
        'apiVersion: garden.io/v1\nkind: Project\nname: artifacts\nenvironments:\n  - name: default\n',
      'garden.yml': `kind: Test
name: report
type: exec
spec:
  command: [sh, -c, "echo ok > \${local.artifactsPath}/report.txt"]
---
kind: Test
name: fallback
type: exec
spec:
  command: [sh, -c, "echo ok > \${local.artifactsPath || 'out'}/report.txt"]
`,
    });
    const error = (await validateCommand({ root, var: [] }).catch((e: unknown) => e)) as TendError;
    // The fallback's Test is not among the problems.
    expect((error.detail as { errors: unknown[] }).errors).toHaveLength(1);
    expect(error).toMatchObject({
      code: 'TEND_TEMPLATE',
      message:
        'unknown key "local.artifactsPath": Garden\'s directory of the artifacts Tests and Runs export is not ' +
        "supported, as tend copies no artifacts (a Test's or Run's `artifacts` are ignored); " +
        'write the files to a path of your own (e.g. under ${local.projectPath})',
      location: { file: 'garden.yml', line: 5 },
    });
  });
});
