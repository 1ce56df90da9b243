/** The OCI registry over HTTP and the simulated builders. */
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { Registry } from '../src/registry.js';
import type { ShellIO } from '../src/shell.js';
import { runCommand, tokenize } from '../src/shell.js';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim();
});
afterAll(async () => {
  await sim?.stop();
});

describe('registry', () => {
  it('is advertised as a local cluster advertises its registry (local-registry-hosting) when asked', async () => {
    const advertising = await startKubeSim({ advertiseRegistry: true });
    try {
      const [configMap] = advertising.store
        .list('configmaps', 'kube-public')
        .filter((c) => c.metadata.name === 'local-registry-hosting');
      expect((configMap as { data?: Record<string, string> }).data?.['localRegistryHosting.v1']).toContain(
        `host: "${advertising.registryHost}"`,
      );
    } finally {
      await advertising.stop();
    }
    expect(sim.store.list('configmaps', 'kube-public').map((c) => c.metadata.name)).not.toContain(
      'local-registry-hosting',
    );
  });

  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: {},
    layers: [],
  });

  it('answers /v2/ and stores manifests by tag and digest', async () => {
    expect((await fetch(`${sim.registryUrl}/v2/`)).status).toBe(200);
    const put = await fetch(`${sim.registryUrl}/v2/shop/api/manifests/v-1`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/vnd.oci.image.manifest.v1+json' },
      body: manifest,
    });
    expect(put.status).toBe(201);
    const digest = put.headers.get('docker-content-digest')!;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const head = await fetch(`${sim.registryUrl}/v2/shop/api/manifests/v-1`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('docker-content-digest')).toBe(digest);
    const byDigest = await fetch(`${sim.registryUrl}/v2/shop/api/manifests/${digest}`);
    expect(await byDigest.text()).toBe(manifest);
    expect(byDigest.headers.get('content-type')).toBe('application/vnd.oci.image.manifest.v1+json');
    expect(await (await fetch(`${sim.registryUrl}/v2/shop/api/tags/list`)).json()).toEqual({
      name: 'shop/api',
      tags: ['v-1'],
    });
  });

  it('answers 404 with an OCI error body for unknown manifests', async () => {
    const r = await fetch(`${sim.registryUrl}/v2/shop/api/manifests/nope`);
    expect(r.status).toBe(404);
    expect(((await r.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('MANIFEST_UNKNOWN');
    expect((await fetch(`${sim.registryUrl}/v2/shop/api/manifests/nope`, { method: 'HEAD' })).status).toBe(
      404,
    );
  });
});

describe('shell and builder', () => {
  let root: string;
  const io = (stdin = ''): ShellIO & { out: () => string; err: () => string } => {
    let out = '';
    let err = '';
    const s = new PassThrough();
    s.end(stdin);
    return {
      stdin: s,
      stdout: (d) => (out += d.toString()),
      stderr: (d) => (err += d.toString()),
      root,
      cwd: '/',
      registry: sim.registry,
      registryHosts: [sim.registryHost],
      env: {},
      out: () => out,
      err: () => err,
    };
  };
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'kube-sim-shell-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('tokenizes quotes and operators', () => {
    expect(tokenize(`sh -c 'echo "a b"' && x;y`)).toEqual(['sh', '-c', 'echo "a b"', '&&', 'x', ';', 'y']);
  });

  it('runs simple scripts with && || ; cd and redirects, confined to the scratch directory', async () => {
    const s = io();
    expect(
      await runCommand(
        [
          'sh',
          '-c',
          'mkdir -p /w/a && cd /w && echo hi > a/f.txt; cat a/f.txt; false || echo fallback; cat ../../../etc/passwd',
        ],
        s,
      ),
    ).toBe(1);
    expect(s.out()).toBe('hi\nfallback\n');
    expect(await readFile(join(root, 'w', 'a', 'f.txt'), 'utf8')).toBe('hi\n');
    const e = io();
    expect(await runCommand(['no-such-binary'], e)).toBe(127);
    expect(e.err()).toContain('executable file not found');
  });

  it('buildctl fails without a Dockerfile', async () => {
    await mkdir(join(root, 'empty'), { recursive: true });
    const s = io();
    const code = await runCommand(
      [
        'buildctl',
        'build',
        '--frontend=dockerfile.v0',
        '--local',
        'context=/empty',
        '--local',
        'dockerfile=/empty',
        '--output',
        `type=image,name=${sim.registryHost}/x/y:1,push=true`,
      ],
      s,
    );
    expect(code).toBe(1);
    expect(s.err()).toContain('failed to read dockerfile');
  });

  it('buildctl fails on a Dockerfile marked to fail', async () => {
    await mkdir(join(root, 'bad'), { recursive: true });
    await writeFile(
      join(root, 'bad', 'Dockerfile'),
      'FROM alpine\n# kube-sim: fail tests are red\nRUN make\n',
    );
    const s = io();
    const code = await runCommand(
      [
        'buildctl-daemonless.sh',
        'build',
        '--frontend',
        'dockerfile.v0',
        '--local',
        'context=/bad',
        '--local',
        'dockerfile=/bad',
        '--output',
        `type=image,name=${sim.registryHost}/x/bad:1,push=true`,
      ],
      s,
    );
    expect(code).toBe(1);
    expect(s.err()).toContain('did not complete successfully');
    expect(s.err()).toContain('tests are red');
    expect(sim.registry.get('x/bad', '1')).toBeUndefined();
  });

  it('buildctl prints progress and pushes a manifest whose digest the registry serves', async () => {
    await mkdir(join(root, 'good', 'src'), { recursive: true });
    await writeFile(join(root, 'good', 'Dockerfile'), 'FROM node:20\nCOPY . .\n');
    await writeFile(join(root, 'good', 'src', 'a.js'), '1');
    const s = io();
    const ref = `${sim.registryHost}/shop/web:v-abc`;
    const code = await runCommand(
      [
        'buildctl',
        'build',
        '--frontend',
        'dockerfile.v0',
        '--local',
        'context=/good',
        '--local',
        'dockerfile=/good',
        '--output',
        `type=image,"name=${ref}",push=true`,
        '--metadata-file',
        '/good/meta.json',
      ],
      s,
    );
    expect(code).toBe(0);
    expect(s.out()).toContain('[1/2] FROM node:20');
    const meta = JSON.parse(await readFile(join(root, 'good', 'meta.json'), 'utf8'));
    const head = await fetch(`${sim.registryUrl}/v2/shop/web/manifests/v-abc`, { method: 'HEAD' });
    expect(head.headers.get('docker-content-digest')).toBe(meta['containerimage.digest']);
    expect(s.out()).toContain(`pushing manifest for ${ref}@${meta['containerimage.digest']}`);
  });

  it('buildctl refuses registries other than the simulator', async () => {
    const s = io();
    const code = await runCommand(
      [
        'buildctl',
        'build',
        '--local',
        'context=/good',
        '--local',
        'dockerfile=/good',
        '--output',
        'type=image,name=registry.example.com/a/b:1,push=true',
      ],
      s,
    );
    expect(code).toBe(1);
    expect(s.err()).toContain('registry.example.com');
  });

  it('a registry instance can be used on its own', () => {
    const r = new Registry();
    const d = r.put('a/b', 't', Buffer.from('{}'), 'application/json');
    expect(r.get('a/b', d)?.body.toString()).toBe('{}');
    expect(r.tags('a/b')).toEqual(['t']);
  });
});
