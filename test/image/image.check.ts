/**
 * The image check (`npm run image:check`, run by CI after the tests: building takes minutes, so it
 * is not part of `npm test`): `npm run image` twice gives the same OCI archive, byte for byte; its
 * configuration runs `tend` as a user that is not root, with the data directory as a volume and
 * the org.opencontainers.image labels; and the image itself, run with buildah (chroot isolation,
 * no container engine), answers `tend --version` and serves /healthz and /readyz from `tend
 * server` with its database in the volume.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, repoRoot, waitFor } from '../helpers/project.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tend-image-'));
const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
};
const storage = [
  '--root',
  path.join(scratch, 'storage'),
  '--runroot',
  path.join(scratch, 'run'),
  '--storage-driver',
  'vfs',
];

afterAll(async () => {
  await run('buildah', [...storage, 'rm', '--all']).catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: repoRoot, env: { ...process.env, ...env }, maxBuffer: 64 << 20 },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stdout}\n${stderr}`))
          : resolve(stdout),
    );
  });
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** A JSON blob of the archive (an OCI image layout in a tar) by its digest. */
async function blob<T>(archive: string, digest: string): Promise<T> {
  return JSON.parse(
    await run('tar', ['-xOf', archive, `blobs/sha256/${digest.replace(/^sha256:/, '')}`]),
  ) as T;
}

describe('the container image', () => {
  it('builds reproducibly, runs tend as a user that is not root, and serves /healthz', async () => {
    const first = path.join(scratch, 'first.oci.tar');
    const second = path.join(scratch, 'second.oci.tar');
    await run('bash', ['scripts/image.sh', first]);
    await run('bash', ['scripts/image.sh', second]);
    // The same image (the manifest's digest in index.json), then the same archive, byte for byte.
    expect(await run('tar', ['-xOf', second, 'index.json'])).toBe(
      await run('tar', ['-xOf', first, 'index.json']),
    );
    expect(sha256(second)).toBe(sha256(first));

    const index = JSON.parse(await run('tar', ['-xOf', first, 'index.json'])) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    expect(index.manifests[0]!.annotations['org.opencontainers.image.ref.name']).toBe(`tend:${version}`);
    const manifest = await blob<{
      config: { digest: string };
      layers: { size: number; mediaType: string }[];
    }>(first, index.manifests[0]!.digest);
    const image = await blob<{
      config: {
        User: string;
        Entrypoint: string[];
        Cmd: string[];
        Volumes: Record<string, object>;
        Env: string[];
        Labels: Record<string, string>;
      };
    }>(first, manifest.config.digest);
    const { config } = image;
    expect(config.User).toBe('10001:10001');
    expect(config.Entrypoint).toEqual(['/usr/local/bin/tend']);
    expect(config.Cmd).toEqual(['server', '--host', '0.0.0.0']);
    expect(Object.keys(config.Volumes)).toEqual(['/var/lib/tend']);
    expect(config.Env).toContain('TEND_DATA_DIR=/var/lib/tend');
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.title': 'tend',
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.licenses': 'Apache-2.0',
      'org.opencontainers.image.revision': expect.stringMatching(/^[0-9a-f]{40}$/),
      'org.opencontainers.image.created': expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      'org.opencontainers.image.description': expect.any(String),
    });
    expect(manifest.layers).toHaveLength(1);
    console.log(
      `image: ${path.basename(first)} ${statSync(first).size} bytes (layer ${manifest.layers[0]!.size} bytes compressed), tend ${version}, Node ${config.Labels['tend.image.node']}`,
    );

    // The image run as it is configured: its entrypoint, as its user.
    const container = (await run('buildah', [...storage, 'from', `oci-archive:${first}`]))
      .trim()
      .split('\n')
      .at(-1)!;
    const inImage = (...args: string[]) => ['run', '--isolation', 'chroot', container, '--', ...args];
    expect((await run('buildah', [...storage, ...inImage(...config.Entrypoint, '--version')])).trim()).toBe(
      version,
    );
    expect((await run('buildah', [...storage, ...inImage('id', '-u')])).trim()).toBe('10001');

    const port = await freePort();
    const server = spawn(
      'buildah',
      [...storage, ...inImage(...config.Entrypoint, ...config.Cmd, '--port', String(port))],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let log = '';
    server.stderr.on('data', (d) => (log += d));
    try {
      const url = `http://127.0.0.1:${port}`;
      const health = await waitFor(
        async () => {
          if (server.exitCode !== null) throw new Error(`tend server in the image exited:\n${log}`);
          return (await fetch(`${url}/healthz`).catch(() => undefined))?.json();
        },
        'tend server in the image to answer /healthz',
        60_000,
      );
      expect(health).toEqual({ status: 'ok' });
      expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ status: 'ready', database: 'sqlite' });
      expect(log).toContain('database   /var/lib/tend/tend.db (SQLite)');
    } finally {
      // The server's own pid (its log says it): SIGTERM stops it gracefully, then buildah returns.
      const pid = Number(/"pid":(\d+)/.exec(log)?.[1]);
      if (pid > 0) process.kill(pid, 'SIGTERM');
      else server.kill('SIGKILL');
      await new Promise((resolve) =>
        server.exitCode !== null ? resolve(null) : server.once('exit', resolve),
      );
    }
  }, 1_200_000);
});
