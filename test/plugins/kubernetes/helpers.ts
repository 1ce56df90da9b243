/**
 * A kube-sim per test file, a kubeconfig pointing at it (KUBECONFIG), projects using the
 * kubernetes provider, and the events of their sessions.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  startKubeSim,
  type KubeSim,
  type KubeSimOptions,
  type PodRule,
} from '../../../tools/kube-sim/src/index.js';
import { DEFAULT_RUN } from '../../../tools/kube-sim/src/rules.js';
import { executeCommand, type ExecuteVerb } from '../../../src/commands/execute.js';
import { readSessionLog } from '../../../src/events/local-log.js';
import type { NamespaceStatusPayload, TendEvent } from '../../../src/events/catalog.js';
import { execPlugin } from '../../../src/plugins/exec/index.js';
import { kubernetesPlugin } from '../../../src/plugins/kubernetes/index.js';
import { resetConnections } from '../../../src/plugins/kubernetes/client/index.js';
import { makeProject, repoRoot } from '../../helpers/project.js';

export interface SimHandle {
  sim: KubeSim;
  kubeconfig: string;
  stop(): Promise<void>;
}

/**
 * The world's clock in this test file: the simulated API server answers with it (`Date`), which
 * the cleanup server checks its own clock against. A test that moves the server's clock
 * (`testClock`) moves this one with it; by default it is the real clock.
 */
let worldNow: () => number = () => Date.now();
export function setWorldClock(now: () => number): void {
  worldNow = now;
}

/**
 * Garden's examples start their database Runs with `sleep 15 && psql …`: on a real cluster, time
 * for the database to come up. kube-sim's database is up at once, so such a container runs for
 * kube-sim's default run time instead of 15 s; it exits and logs as it would after the sleep.
 */
export const gardenDatabaseWait: PodRule = {
  command: /^(\/bin\/)?sh -c sleep 15 && /,
  behaviour: { runMs: DEFAULT_RUN },
};

/**
 * Starts kube-sim and points KUBECONFIG at it (this test file's process only) until `stop`, which
 * gives KUBECONFIG back its value from before (the next file in a shared worker sees the same).
 */
export async function startSim(options: KubeSimOptions = {}): Promise<SimHandle> {
  const sim = await startKubeSim({ now: () => worldNow(), ...options });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-kubeconfig-'));
  const kubeconfig = path.join(dir, 'config');
  await sim.writeKubeconfig(kubeconfig);
  const kubeconfigBefore = process.env.KUBECONFIG;
  process.env.KUBECONFIG = kubeconfig;
  resetConnections();
  return {
    sim,
    kubeconfig,
    async stop() {
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
      if (kubeconfigBefore === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = kubeconfigBefore;
      resetConnections();
    },
  };
}

export interface ProjectOptions {
  namespace?: string;
  buildMode?: 'cluster-buildkit' | 'kaniko';
  registry: string;
  providerExtra?: string;
  files?: Record<string, string>;
  /** Registry path; unique per project by default, so builds of different tests never share images. */
  repository?: string;
  project?: string;
  /** Extra lines of the Project document, e.g. `variables: { replicas: 1 }`. */
  projectExtra?: string;
}

export function projectYaml(o: ProjectOptions): string {
  return `kind: Project
name: ${o.project ?? 'shop'}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${o.namespace ?? 'shop-dev'}
${o.projectExtra ?? ''}
providers:
  - name: kubernetes
    context: kube-sim
    buildMode: ${o.buildMode ?? 'cluster-buildkit'}
    deploymentRegistry: ${o.registry}/${o.repository ?? `t${randomBytes(4).toString('hex')}`}
    podStartTimeout: 20
    namespaceTimeout: 20
${o.providerExtra ?? ''}`;
}

export const dockerfile = 'FROM node:20-alpine\nCOPY . /app\nCMD ["node", "/app/main.js"]\n';

export const deploymentYaml = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels: { app: api }
  template:
    metadata:
      labels: { app: api }
    spec:
      containers:
        - name: api
          ports: [{ containerPort: 8080 }]
`;

/** A project with a container Build, a kubernetes Deploy and a kubernetes-pod Test. */
export function shopProject(o: ProjectOptions): string {
  return makeProject({
    'tend.yml': projectYaml(o),
    'api/api.tend.yml': `kind: Build
type: container
name: api
exclude: ["**/*.md"]
---
kind: Deploy
type: kubernetes
name: api
dependencies: [build.api]
spec:
  files: [k8s/api.yaml]
  image: \${actions.build.api.outputs.image}
  timeout: 20
---
kind: Test
type: kubernetes-pod
name: api-integ
dependencies: [deploy.api]
spec:
  image: \${actions.build.api.outputs.image}
  command: [sh, -c, "echo integration ok && echo second line"]
  timeout: 20
`,
    'api/Dockerfile': dockerfile,
    'api/main.js': 'console.log("hello")\n',
    'api/README.md': '# not in the image\n',
    'api/.dockerignore': 'secret.txt\n',
    'api/secret.txt': 'not in the image either\n',
    'api/k8s/api.yaml': deploymentYaml,
    ...o.files,
  });
}

export const plugins = [execPlugin, kubernetesPlugin];

/** The files of test/plugins/kubernetes/fixtures/<name> as `makeProject` takes them, under `under/`. */
export function fixtureFiles(name: string, under: string): Record<string, string> {
  const dir = path.join(repoRoot, 'test', 'plugins', 'kubernetes', 'fixtures', name);
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[path.posix.join(under, path.relative(dir, full).split(path.sep).join('/'))] = readFileSync(
      full,
      'utf8',
    );
  }
  return files;
}

/** The messages of the `log` events of a session's actions (`applied Deployment web`, …), in order. */
export function logMessages(root: string, sessionId: string): string[] {
  return sessionEvents(root, sessionId)
    .filter((e) => e.type === 'log')
    .map((e) => (e.payload as { message: string }).message);
}

export function execute(
  verb: ExecuteVerb,
  root: string,
  names: string[] = [],
  extra: { force?: boolean; var?: string[] } = {},
) {
  return executeCommand(verb, names, { root, ...extra }, plugins);
}

export function sessionEvents(root: string, sessionId: string): TendEvent[] {
  return readSessionLog(path.join(root, '.tend', 'events', `${sessionId}.jsonl`)).events;
}

export function namespaceEvents(events: TendEvent[]): NamespaceStatusPayload[] {
  return events.filter((e) => e.type === 'namespaceStatus').map((e) => e.payload as NamespaceStatusPayload);
}

/** The events of every session of the project, oldest first. */
export function allEvents(root: string): TendEvent[] {
  const dir = path.join(root, '.tend', 'events');
  return readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl'))
    .sort()
    .flatMap((n) => readSessionLog(path.join(dir, n)).events);
}

const run = promisify(execFile);

/** Real kubectl against the simulator. */
export async function kubectl(kubeconfig: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('/usr/bin/kubectl', ['--kubeconfig', kubeconfig, ...args], {
    timeout: 30_000,
  });
  return stdout;
}

export async function kubectlJson<T = Record<string, unknown>>(
  kubeconfig: string,
  ...args: string[]
): Promise<T> {
  return JSON.parse(await kubectl(kubeconfig, ...args, '-o', 'json')) as T;
}

/** The `data` of a ConfigMap in the cluster, as kubectl reads it. */
export async function configMapData(
  kubeconfig: string,
  namespace: string,
  name: string,
): Promise<Record<string, string>> {
  return (
    await kubectlJson<{ data: Record<string, string> }>(kubeconfig, '-n', namespace, 'get', 'configmap', name)
  ).data;
}
