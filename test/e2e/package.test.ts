/**
 * tend as users install it: the `npm pack` tarball (the built CLI and library, the docs its
 * messages point at, the licence, nothing else) installed with `npm install -g` into an empty prefix,
 * offline from the npm cache, with no development dependency and no build of tend's; then
 * `tend --version`, `tend server` (answering /healthz) and `tend agent` from that install. On
 * every Node line (`npm run test:lines`): nothing is compiled and no install script runs (SQLite
 * is Node's own node:sqlite), so the same tarball works on each line as it is.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, repoRoot, startTend, type RunningTend } from '../helpers/project.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tend-package-'));
const prefix = path.join(scratch, 'prefix');
const servers: RunningTend[] = [];

afterAll(async () => {
  for (const server of servers) {
    server.signal('SIGTERM');
    await server.exited;
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** npm with the Node that runs this test first on PATH (the line under test); its output. */
function npm(args: string[], env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const options = {
      cwd: repoRoot,
      env: {
        ...process.env,
        PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
        npm_config_update_notifier: 'false',
        ...env,
      },
      maxBuffer: 64 * 1024 * 1024,
    };
    execFile('npm', args, options, (error, stdout, stderr) =>
      error
        ? reject(new Error(`npm ${args.join(' ')}: ${error.message}\n${stdout}\n${stderr}`))
        : resolve({ stdout, stderr }),
    );
  });
}

/** The installed `tend` (what its bin/ link points at), run by the Node under test. */
function installedTend(args: string[], env: Record<string, string> = {}) {
  const bin = path.join(prefix, 'lib', 'node_modules', 'tend', 'bin', 'tend.js');
  return startTend(args, { env, cwd: scratch, bin });
}

describe('the npm package', () => {
  it('packs only what users need, installs offline with no build, and runs tend, tend server and tend agent', async () => {
    // The suite built dist/ before it started: packing must not build again under the other tests.
    const packed = await npm(['pack', '--json', '--pack-destination', scratch], { TEND_PACK_BUILT: '1' });
    const [info] = JSON.parse(packed.stdout) as [
      { filename: string; size: number; entryCount: number; files: { path: string }[] },
    ];
    const files = info.files.map((f) => f.path);
    console.log(`npm pack: ${info.filename}, ${info.size} bytes, ${info.entryCount} files`);
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'docs/install.md',
        'docs/errors.md',
        'bin/tend.js',
        'bin/package.json',
        'dist/cli/tend.cjs',
        'dist/cli/launch.cjs',
        'dist/cli/tend.cjs.map',
        'dist/src/index.js',
        'dist/src/index.d.ts',
        'dist/src/server/db/sqlite-writer-thread.js',
      ]),
    );
    const outside = files.filter(
      (f) =>
        !/^(package\.json|README\.md|LICENSE|docs\/[A-Za-z-]+\.md|bin\/[^/]+|dist\/(cli|src)\/.+\.(c?js|d\.ts)|dist\/cli\/tend\.cjs\.map)$/.test(
          f,
        ),
    );
    expect(outside).toEqual([]);
    expect(existsSync(path.join(repoRoot, 'npm-shrinkwrap.json'))).toBe(false);

    // Offline, from the npm cache, with no install script allowed: nothing of tend's needs one.
    const install = await npm([
      'install',
      '--global',
      '--prefix',
      prefix,
      '--offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      path.join(scratch, info.filename),
    ]);
    // What npm resolved from tend's ranges suits this Node line, and every range is met.
    expect(install.stderr).not.toMatch(/EBADENGINE|deprecated/i);
    await npm(['ls', '--global', '--all', '--prefix', prefix]);
    const installed = path.join(prefix, 'lib', 'node_modules', 'tend');
    const dependencies = readdirSync(path.join(installed, 'node_modules'));
    for (const dev of ['vitest', 'typescript', 'esbuild', 'tsx', 'eslint', 'prettier', 'playwright-core']) {
      expect(dependencies).not.toContain(dev);
    }
    expect(existsSync(path.join(installed, 'src'))).toBe(false);

    // A plugin author's TypeScript against the installed package: every type a cleanup part
    // works with comes from 'tend', and they are the real types (a wrong field does not compile).
    expect(await typeCheckPluginAuthor(installed, pluginAuthorSource)).toBe('');
    expect(
      await typeCheckPluginAuthor(
        installed,
        pluginAuthorSource.replace("state: 'active'", "state: 'running'"),
      ),
    ).toMatch(/error TS2322/);
    // The wire's word is not the plugin's: a resource named by namespaceName does not compile.
    expect(
      await typeCheckPluginAuthor(
        installed,
        pluginAuthorSource.replace("name: 'shop-dev',\n  uid", "namespaceName: 'shop-dev',\n  uid"),
      ),
    ).toMatch(/error TS2353/);

    const version = await installedTend(['--version']).exited;
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(readVersion('.'));
    expect(version.stderr).toBe('');

    // tend server from the install: /healthz and /readyz (its SQLite: node:sqlite).
    const port = await freePort();
    const dataDir = path.join(scratch, 'data');
    const server = installedTend(['server', '--data-dir', dataDir, '--port', String(port)]);
    servers.push(server);
    await server.waitForOutput(/tend server listening/, 'the installed server to listen');
    const url = `http://127.0.0.1:${port}`;
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ status: 'ready', database: 'sqlite' });

    // tend agent from the install, with a token from a file: one pass for this host's environments.
    const created = await installedTend([
      'server',
      'token',
      'create',
      '--name',
      'agent',
      '--scope',
      'agent',
      '--data-dir',
      dataDir,
      '--json',
    ]).exited;
    expect(created.code, created.stderr).toBe(0);
    const tokenFile = path.join(scratch, 'agent-token');
    writeFileSync(tokenFile, (JSON.parse(created.stdout) as { token: string }).token, { mode: 0o600 });
    const agent = await installedTend(
      ['agent', '--server', url, '--token-file', tokenFile, '--local', '--once', '--json'],
      { TEND_CONFIG_DIR: path.join(scratch, 'config'), HOME: scratch },
    ).exited;
    expect(agent.code, agent.stderr).toBe(0);
    const pass = JSON.parse(agent.stdout) as {
      last: { errors: string[]; inventories: { targetKey: string }[] };
    };
    expect(pass.last.errors).toEqual([]);
    expect(pass.last.inventories.map((i) => i.targetKey)).toEqual([expect.stringMatching(/^local\//)]);
    // Every thread that opened SQLite (the writer's, the checkpointer, the server's own for the
    // agent's authenticated requests) kept Node 22's experimental warning for node:sqlite to itself.
    for (const stderr of [server.stderr(), created.stderr, agent.stderr]) {
      expect(stderr).not.toMatch(/ExperimentalWarning|experimental feature/);
    }
  }, 900_000);
});

/** A cleanup part as a plugin author writes it in TypeScript, with the types from 'tend'. */
const pluginAuthorSource = `
import type {
  CleanupInventory,
  CleanupJob,
  CleanupPrimitives,
  CleanupResource,
  CleanupTarget,
  EnvironmentArchive,
  PluginDefinition,
  RestoreResult,
  Target,
} from 'tend';
import { TendError, targetKey } from 'tend';

const target: Target = { kind: 'plugin', targetKind: 'buckets', id: 'store-1' };
const resource: CleanupResource = {
  name: 'shop-dev',
  uid: 'u-1',
  version: '1',
  state: 'active',
  managedByTend: true,
  adopted: false,
};
const archive: EnvironmentArchive = {
  kind: 'plugin',
  pluginName: 'buckets',
  name: 'shop-dev',
  content: { objects: [] },
  notArchived: [],
};
export const cleanup: Pick<CleanupPrimitives, 'targets' | 'inventory' | 'archive' | 'restore'> = {
  async targets(): Promise<CleanupTarget[]> {
    return [{ targetKey: targetKey(target), pluginName: 'buckets', description: 'a store' }];
  },
  async inventory(): Promise<CleanupInventory> {
    return { complete: true, items: [resource] };
  },
  async archive(_ctx, _target, found): Promise<EnvironmentArchive> {
    return { ...archive, name: found.name };
  },
  async restore(_ctx, _target, job): Promise<RestoreResult> {
    if (job.resourceName === 'kube-system') throw new TendError('TEND_ARCHIVE', 'never');
    return { namespace: job.resourceName, restored: [], notRestored: [] };
  },
};
export function describe(job: CleanupJob, plugin: PluginDefinition): string {
  return \`\${plugin.name}: \${job.action} \${job.namespaceName}\`;
}
`;

/**
 * Type-checks `source` as a plugin author's module next to the installed package (resolved as
 * 'tend' from its node_modules), with this repository's TypeScript: the compiler's errors, or ''.
 */
async function typeCheckPluginAuthor(installed: string, source: string): Promise<string> {
  const dir = mkdtempSync(path.join(scratch, 'author-'));
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(installed, path.join(dir, 'node_modules', 'tend'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(path.join(dir, 'plugin.ts'), source);
  const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = [tsc, '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--target', 'es2022'];
  return new Promise((resolve) => {
    execFile(process.execPath, [...args, 'plugin.ts'], { cwd: dir }, (_error, stdout, stderr) =>
      resolve(`${stdout}${stderr}`.trim()),
    );
  });
}

/** The version of tend ('.') or of a package in node_modules. */
function readVersion(name: string): string {
  const dir = name === '.' ? repoRoot : path.join(repoRoot, 'node_modules', name);
  return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}
