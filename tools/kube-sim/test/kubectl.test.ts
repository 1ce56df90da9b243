/** Conformance: the real kubectl against the simulator. */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, pod, waitFor } from './helpers.js';

const KUBECTL = '/usr/bin/kubectl';
const haveKubectl = existsSync(KUBECTL);

let sim: KubeSim;
let dir: string;
let env: NodeJS.ProcessEnv;

function kubectl(
  args: string[],
  input?: string | Buffer,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(KUBECTL, args, { env, maxBuffer: 10 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout: stdout.toString(), stderr: stderr.toString() });
    });
    if (input !== undefined) child.stdin!.end(input);
    else child.stdin!.end();
  });
}

async function ok(args: string[], input?: string | Buffer): Promise<string> {
  const r = await kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

describe.skipIf(!haveKubectl)('kubectl against kube-sim', () => {
  beforeAll(async () => {
    // Terminating long enough for three kubectl runs on a busy machine (about 0.5 s each there).
    sim = await startKubeSim({ namespaceDeleteDelayMs: 5000 });
    dir = await mkdtemp(join(tmpdir(), 'kube-sim-kubectl-'));
    await sim.writeKubeconfig(join(dir, 'kubeconfig'));
    env = { ...process.env, KUBECONFIG: join(dir, 'kubeconfig'), HOME: dir };
  });
  afterAll(async () => {
    await sim?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reports the server version and discovers the resources', async () => {
    const v = JSON.parse(await ok(['version', '-o', 'json']));
    expect(v.serverVersion.gitVersion).toMatch(/^v1\.32/);
    const res = await ok(['api-resources', '--no-headers']);
    for (const r of ['namespaces', 'pods', 'deployments', 'statefulsets', 'jobs', 'configmaps', 'secrets']) {
      expect(res).toContain(r);
    }
  });

  it('creates, labels, annotates, lists and deletes namespaces; delete --wait sees Terminating then gone', async () => {
    expect(await ok(['create', 'namespace', 'team-a'])).toContain('namespace/team-a created');
    await ok(['label', 'namespace', 'team-a', 'tend.dev/env=pr-7']);
    await ok(['annotate', 'namespace', 'team-a', 'tend.dev/owner=ana']);
    const got = JSON.parse(await ok(['get', 'namespace', 'team-a', '-o', 'json']));
    expect(got.metadata.labels['tend.dev/env']).toBe('pr-7');
    expect(got.metadata.annotations['tend.dev/owner']).toBe('ana');
    expect(got.status.phase).toBe('Active');
    expect(await ok(['get', 'namespaces', '-l', 'tend.dev/env=pr-7', '-o', 'name'])).toBe(
      'namespace/team-a\n',
    );
    const dup = await kubectl(['create', 'namespace', 'team-a']);
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toContain('AlreadyExists');

    await ok(['delete', 'namespace', 'team-a', '--wait=false']);
    expect(await ok(['get', 'namespace', 'team-a', '-o', 'jsonpath={.status.phase}'])).toBe('Terminating');
    const blocked = await kubectl(['create', 'configmap', 'x', '-n', 'team-a', '--from-literal=a=b']);
    expect(blocked.stderr).toContain('because it is being terminated');
    const del = await ok(['delete', 'namespace', 'team-a', '--wait', '--timeout=20s']);
    expect(del).toContain('deleted');
    const gone = await kubectl(['get', 'namespace', 'team-a']);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain('NotFound');
  });

  it('applies a Deployment and follows the rollout to completion, twice', async () => {
    await ok(['create', 'namespace', 'shop']);
    const manifest = (image: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: ${image}
`;
    await writeFile(join(dir, 'd.yaml'), manifest('shop/api:v1'));
    expect(await ok(['apply', '-f', join(dir, 'd.yaml')])).toContain('deployment.apps/api created');
    expect(await ok(['rollout', 'status', 'deployment/api', '-n', 'shop', '--timeout=20s'])).toContain(
      'successfully rolled out',
    );
    await writeFile(join(dir, 'd.yaml'), manifest('shop/api:v2'));
    expect(await ok(['apply', '-f', join(dir, 'd.yaml')])).toContain('configured');
    expect(await ok(['rollout', 'status', 'deployment/api', '-n', 'shop', '--timeout=20s'])).toContain(
      'successfully rolled out',
    );
    const pods = JSON.parse(await ok(['get', 'pods', '-n', 'shop', '-l', 'app=api', '-o', 'json']));
    expect(
      pods.items.filter(
        (p: { spec: { containers: { image: string }[] } }) => p.spec.containers[0]!.image === 'shop/api:v2',
      ),
    ).toHaveLength(2);
    expect(await ok(['apply', '--server-side', '-f', join(dir, 'd.yaml')])).toContain('serverside-applied');
    expect(await ok(['create', 'deployment', 'web', '-n', 'shop', '--image=nginx'])).toContain('created');
    expect(await ok(['rollout', 'status', 'deployment/web', '-n', 'shop', '--timeout=20s'])).toContain(
      'successfully rolled out',
    );
  });

  it('follows StatefulSet and DaemonSet rollouts (rollout status waits for every pod at the new revision)', async () => {
    await ok(['create', 'namespace', 'roll']);
    const manifest = (release: string): string =>
      ['StatefulSet', 'DaemonSet']
        .map(
          (kind) => `apiVersion: apps/v1
kind: ${kind}
metadata:
  name: ${kind.toLowerCase()}
  namespace: roll
spec:
${kind === 'StatefulSet' ? '  replicas: 2\n  serviceName: db\n' : ''}  selector:
    matchLabels: {app: ${kind.toLowerCase()}}
  template:
    metadata:
      labels: {app: ${kind.toLowerCase()}}
      annotations: {kube-sim.tend.dev/start-ms: "300"}
    spec:
      containers:
      - name: main
        image: shop/${kind.toLowerCase()}:${release}
`,
        )
        .join('---\n');
    const images = async (app: string) =>
      JSON.parse(await ok(['get', 'pods', '-n', 'roll', '-l', `app=${app}`, '-o', 'json']))
        .items.filter((p: { metadata: { deletionTimestamp?: string } }) => !p.metadata.deletionTimestamp)
        .map((p: { spec: { containers: { image: string }[] } }) => p.spec.containers[0]!.image);
    for (const release of ['v1', 'v2']) {
      await writeFile(join(dir, 'roll.yaml'), manifest(release));
      await ok(['apply', '-f', join(dir, 'roll.yaml')]);
      const sts = ['rollout', 'status', 'statefulset/statefulset', '-n', 'roll', '--timeout=20s'];
      expect(await ok(sts)).toContain('roll out complete: 2 new pods have been updated');
      expect(await images('statefulset')).toEqual([
        `shop/statefulset:${release}`,
        `shop/statefulset:${release}`,
      ]);
      const ds = ['rollout', 'status', 'daemonset/daemonset', '-n', 'roll', '--timeout=20s'];
      expect(await ok(ds)).toContain('daemon set "daemonset" successfully rolled out');
      expect(await images('daemonset')).toEqual([`shop/daemonset:${release}`]);
    }
    expect(await ok(['get', 'daemonsets', '-n', 'roll'])).toMatch(/^daemonset +1 +1 +1 +1 +1 /m);
  });

  it('watches pods with get -w until the expected line appears', async () => {
    await ok(['create', 'namespace', 'watch-me']);
    const child = spawn(KUBECTL, ['get', 'pods', '-w', '-n', 'watch-me'], { env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const before = sim.store.watchers();
      await waitFor(() => sim.store.watchers() > before, 'kubectl to open its watch');
      const r = await call(sim, 'POST', '/api/v1/namespaces/watch-me/pods', pod('w1'));
      expect(r.status).toBe(201);
      await waitFor(() => /w1\s+1\/1\s+Running/.test(out), 'a Running line for w1');
    } finally {
      child.kill();
    }
  });

  it('prints logs, and follows them until the container ends', async () => {
    await ok(['create', 'namespace', 'logs']);
    await ok([
      'run',
      'hello',
      '-n',
      'logs',
      '--image=busybox',
      '--restart=Never',
      '--',
      'sh',
      '-c',
      'echo hello && echo world',
    ]);
    await waitFor(
      async () =>
        (await ok(['get', 'pod', 'hello', '-n', 'logs', '-o', 'jsonpath={.status.phase}'])) === 'Succeeded',
      'hello to succeed',
    );
    expect(await ok(['logs', 'hello', '-n', 'logs'])).toBe('hello\nworld\n');
    expect(await ok(['logs', 'hello', '-n', 'logs', '--tail=1'])).toBe('world\n');
    const slow = pod('slow', {
      restartPolicy: 'Never',
      annotations: { 'kube-sim.tend.dev/logs': 'a\nb\nc', 'kube-sim.tend.dev/log-interval-ms': '100' },
    });
    await call(sim, 'POST', '/api/v1/namespaces/logs/pods', slow);
    await waitFor(() => sim.store.get('pods', 'logs', 'slow')?.status?.phase === 'Running', 'slow to run');
    expect(await ok(['logs', '-f', 'slow', '-n', 'logs'])).toBe('a\nb\nc\n');
  });

  it('execs with stdin: cat echoes, tar unpacks into the scratch directory, exit codes come back', async () => {
    await ok(['create', 'namespace', 'exec']);
    await ok(['run', 'builder', '-n', 'exec', '--image=moby/buildkit:latest']);
    await waitFor(
      () => sim.store.get('pods', 'exec', 'builder')?.status?.phase === 'Running',
      'builder to run',
    );
    expect(await ok(['exec', '-i', 'builder', '-n', 'exec', '--', 'cat'], 'piped through\n')).toBe(
      'piped through\n',
    );
    const src = join(dir, 'ctx');
    await rm(src, { recursive: true, force: true });
    await import('node:fs/promises').then((fs) => fs.mkdir(join(src, 'app'), { recursive: true }));
    await writeFile(join(src, 'Dockerfile'), 'FROM alpine\n');
    await writeFile(join(src, 'app', 'main.js'), 'console.log(1)\n');
    await tar.c({ cwd: src, file: join(dir, 'ctx.tar') }, ['.']);
    await ok(
      ['exec', '-i', 'builder', '-n', 'exec', '--', 'tar', '-x', '-C', '/workspace'],
      await readFile(join(dir, 'ctx.tar')),
    );
    const scratch = await sim.store.scratchDir('exec', 'builder');
    expect(await readFile(join(scratch, 'workspace', 'app', 'main.js'), 'utf8')).toBe('console.log(1)\n');
    expect(await ok(['exec', 'builder', '-n', 'exec', '--', 'ls', '/workspace'])).toBe('Dockerfile\napp\n');
    const failed = await kubectl(['exec', 'builder', '-n', 'exec', '--', 'sh', '-c', 'exit 7']);
    expect(failed.code).toBe(7);
    const out = await ok([
      'exec',
      'builder',
      '-n',
      'exec',
      '--',
      'buildctl',
      'build',
      '--frontend',
      'dockerfile.v0',
      '--local',
      'context=/workspace',
      '--local',
      'dockerfile=/workspace',
      '--output',
      `type=image,name=${sim.registryHost}/shop/api:v-abc,push=true`,
    ]);
    expect(out).toContain('pushing manifest');
    expect(sim.registry.get('shop/api', 'v-abc')).toBeDefined();
  });
});
