/**
 * A Garden `container` Run or Test, which tend runs as its kubernetes-pod, is checked with Garden's
 * container keys (docs/reference/action-types/Run/container.md, Test/container.md): a key
 * Garden's container Run does not have — a misspelt one, or a kubernetes-pod Run's (`resource`,
 * `manifestFiles`) — is an error at its line naming Garden's keys, as `garden validate` refuses it.
 * A container Deploy's key that tend ignores takes what Garden's schema takes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = `apiVersion: garden.io/v1
kind: Project
name: crun
environments: [{ name: local }]
providers: [{ name: local-kubernetes }]
`;

const gardenKeys =
  'command, args, env, cpu, memory, volumes, privileged, addCapabilities, dropCapabilities, tty, deploymentStrategy, artifacts, image, cacheResult';

/** `CODE file:line message` of each problem `tend validate` finds. */
async function validationErrors(root: string): Promise<string[]> {
  let error: TendError | undefined;
  try {
    await validateCommand({ root, var: [] });
  } catch (caught) {
    error = caught as TendError;
  }
  const errors = (
    error?.detail as { errors: { code: string; message: string; location: { file: string; line: number } }[] }
  )?.errors;
  return (errors ?? []).map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message}`);
}

describe('a Garden container Run or Test', () => {
  it("validates with Garden's container keys, those tend ignores noted", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': `kind: Run
type: container
name: migrate
spec:
  image: busybox:1.36
  command: [sh, -c, "echo hi"]
  args: []
  env: { A: b }
  cpu: { min: 10, max: 100 }
  memory: { min: 64, max: 128 }
  privileged: false
  tty: false
  artifacts: [{ source: /out, target: out }]
  cacheResult: false
`,
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.exitCode).toBe(0);
    expect(validated.data.actions.map((a) => a.ref)).toEqual(['run.migrate']);
    expect(validated.data.notes?.map((n) => `${n.file}:${n.line} ${n.message}`)).toEqual([
      "garden.yml:9 cpu, memory, privileged, tty and artifacts: Garden's pod settings that tend accepts and ignores",
    ]);
  });

  it("refuses a key Garden's container Run does not have at its line, naming Garden's keys", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': `kind: Run
type: container
name: rclone-init
spec:
  image: rclone/rclone
  command: [rclone, version]
  restartPolicy: Never
  comand: [x]
---
kind: Test
type: container
name: smoke
spec:
  image: busybox
  healthCheck: { command: [true] }
`,
    });
    expect(await validationErrors(root)).toEqual([
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:7 unknown key "restartPolicy" in spec; expected one of: ${gardenKeys}`,
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:8 unknown key "comand" in spec; did you mean "command"? expected one of: ${gardenKeys}`,
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:15 unknown key "healthCheck" in spec; expected one of: ${gardenKeys}`,
    ]);
  });

  it("refuses a kubernetes-pod Run's keys (resource, manifestFiles, podSpec…), saying whose they are", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': `kind: Run
type: container
name: migrate
spec:
  image: busybox:1.36
  command: [sh, -c, "echo hi"]
  manifestFiles: [nothing-here.yaml]
  resource:
    kind: Deployment
    name: web
---
kind: Test
type: container
name: smoke
spec:
  image: busybox
  podSpec: { containers: [] }
  kustomize: { path: . }
`,
    });
    const whose = (key: string, kind: string) =>
      `; ${key} is a key of a kubernetes-pod ${kind} (type: kubernetes-pod), not of a container ${kind}`;
    expect(await validationErrors(root)).toEqual([
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:7 unknown key "manifestFiles" in spec; expected one of: ${gardenKeys}${whose('manifestFiles', 'Run')}`,
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:8 unknown key "resource" in spec; expected one of: ${gardenKeys}${whose('resource', 'Run')}`,
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:17 unknown key "podSpec" in spec; expected one of: ${gardenKeys}${whose('podSpec', 'Test')}`,
      `TEND_CONFIG_UNKNOWN_KEY garden.yml:18 unknown key "kustomize" in spec; expected one of: ${gardenKeys}${whose('kustomize', 'Test')}`,
    ]);
  });
});

const deployWithLocalPort = (localPort: string) => `kind: Deploy
type: container
name: web
spec:
  image: nginx:alpine
  ports:
    - name: http
      containerPort: 80
      localPort: ${localPort}
`;

describe("a Garden container Deploy's ports[].localPort", () => {
  it("takes any number, as Garden's joi.number() does: 0 (a template's default), a negative or fractional one", async () => {
    for (const localPort of ['0', '-1', '10080.5', '70000']) {
      const root = makeProject({
        'project.garden.yml': project,
        'garden.yml': deployWithLocalPort(localPort),
      });
      const validated = await validateCommand({ root, var: [] });
      expect(validated.exitCode, `localPort: ${localPort}`).toBe(0);
      expect(validated.data.actions.map((a) => a.ref)).toEqual(['deploy.web']);
    }
  });

  it('is noted once per action, at the first port that has one, as tend makes no port forward', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'garden.yml': `${deployWithLocalPort('0')}    - name: admin
      containerPort: 81
      localPort: 10081
---
kind: Module
type: container
name: api
image: nginx:alpine
services:
  - name: api
    ports:
      - name: http
        containerPort: 8080
        localPort: 18080
`,
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.data.notes?.map((n) => `${n.file}:${n.line} ${n.message}`)).toEqual([
      'garden.yml:9 ports[].localPort: a local port forward, which tend does not make; ignored',
      'garden.yml:23 ports[].localPort: a local port forward, which tend does not make; ignored',
    ]);
  });

  it('is refused at its line when it is not a number', async () => {
    const root = makeProject({ 'project.garden.yml': project, 'garden.yml': deployWithLocalPort('"near"') });
    expect(await validationErrors(root)).toEqual([
      'TEND_CONFIG_INVALID garden.yml:9 invalid value for spec.ports[0].localPort: expected a number, got "near"',
    ]);
  });
});
