/**
 * What `tend validate` says of a Garden file it refuses: one error per problem, naming the keys as
 * the file writes them (not as tend renamed them), at their file:line.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadProjectConfig } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v2
kind: Project
name: said
environments:
  - name: local
providers:
  - name: local-kubernetes
`;

/** The problems of a rejected load, each as `file:line message`. */
async function problemLines(files: Record<string, string>): Promise<string[]> {
  const root = makeProject(files);
  const error = await loadProjectConfig({ cwd: root, plugins: builtinPlugins() }).then(
    () => undefined,
    (caught: TendError) => caught,
  );
  const errors = (error?.detail?.errors ?? []) as {
    message: string;
    location: { file: string; line: number };
  }[];
  return errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`);
}

describe("an exec Deploy's deployCommand", () => {
  it('is named as written when missing or not a list', async () => {
    expect(
      await problemLines({
        'project.garden.yml': gardenProject,
        'garden.yml': `kind: Deploy
name: no-command
type: exec
spec: {}
---
kind: Deploy
name: string-command
type: exec
spec:
  deployCommand: "echo hi"
`,
      }),
    ).toEqual([
      'garden.yml:4 invalid value for spec.deployCommand: expected a list, got nothing',
      'garden.yml:10 invalid value for spec.deployCommand: expected a list, got "echo hi"',
    ]);
  });
});

describe("a kubernetes-exec Run's resource.podSelector", () => {
  it('is one error, saying what to write instead', async () => {
    expect(
      await problemLines({
        'project.garden.yml': gardenProject,
        'garden.yml': `kind: Run
name: exec-pod-selector
type: kubernetes-exec
spec:
  resource:
    podSelector:
      app: busybox
  command: [echo, ok]
`,
      }),
    ).toEqual([
      'garden.yml:6 resource.podSelector is not read by tend; name the workload (`kind` and `name`)',
    ]);
  });
});

describe("a Garden file's kind", () => {
  it("names Garden's format before 0.10 for a top-level module:, and Garden's kinds for a misspelt one", async () => {
    expect(
      await problemLines({
        'project.garden.yml': `${gardenProject}---
kind: Modul
name: typo
type: exec
`,
        'a/garden.yml': `module:
  name: a
  type: exec
`,
      }),
    ).toEqual([
      'project.garden.yml:9 unknown kind "Modul"; did you mean "Module"? expected one of: Project, Build, Deploy, Test, Run, Module, Workflow, Command, ConfigTemplate, RenderTemplate',
      "a/garden.yml:1 a top-level `module:` is Garden's format before 0.10, which tend does not read; write it as a `kind: Module` document (Garden 0.12 and later)",
    ]);
  });
});
