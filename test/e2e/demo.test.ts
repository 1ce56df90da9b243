/**
 * The README's demo, run to the end (`--exit`): it records the example environments in its
 * server, and its embedded executor deletes the idle builds-only namespace on its own once the
 * policy is enforced, leaving the foreign and the adopted namespace.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../helpers/project.js';

describe('npm run demo', () => {
  it('deploys the examples, cleans up the idle builds-only environment automatically, and prints the dashboard URL and tokens', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'scripts', 'demo.ts'), '--exit'],
      {
        cwd: repoRoot,
        env: { ...process.env, CI: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/Dashboard: +http:\/\/127\.0\.0\.1:\d+\//);
    expect(stdout).toMatch(/Read token: +tend_\S+/);
    // The server's view, printed by `tend environments`, lists the example's environment.
    expect(stdout).toMatch(/^local-shop +dev +local-shop-\S+ .* active/m);
    expect(stdout).toMatch(/^shop +dev +shop-\S+ .* active/m);
    // What the local-shop service printed, through `tend logs`; its passing test's output.
    expect(stdout).toMatch(/^deploy\.service process \d+ \| shop listening on http:\/\/127\.0\.0\.1:\d+$/m);
    expect(stdout).toMatch(/^── test\.smoke \(passed\)/m);
    // One environment, then protected from its project directory.
    expect(stdout).toMatch(/^local-shop \/ dev {2}\(namespace local-shop-\S+\)$/m);
    expect(stdout).toMatch(/^Recent sessions:$/m);
    expect(stdout).toMatch(
      /Protected local-shop\/dev \(local-shop-\S+\): automatic cleanup never touches it/,
    );

    // Cleanup: first a dry run, then enforced, then deleted without a manual trigger.
    expect(stdout).toMatch(/^dry-run +.* builds +dev +builds-dev +would delete \(dry-run/m);
    expect(stdout).toContain('Enforced builds/dev: delete after 1m of inactivity.');
    expect(stdout).toMatch(/builds-dev deleted [\d.]+s after enforcing/);
    expect(stdout).toMatch(/audit: \S+ cleanup-done by executor:\S+: \{.*"namespace":"builds-dev"/);
    expect(stdout).toMatch(
      /webhook: cleanup\.done for builds\/dev \(builds-dev\) delivered to http:\/\/127\.0\.0\.1:\d+\/hooks\/tend, signature verified/,
    );
    // Pause and exact resume: 3 replicas, paused to 0 by the server, restored by `tend deploy`.
    expect(stdout).toMatch(/sleepy-dev: deployment web has 3 replicas/);
    expect(stdout).toMatch(/paused: deployment web at 0 replicas \(tend\.dev\/paused-replicas: 3\)/);
    expect(stdout + stderr).toMatch(
      /resumed the paused environment dev: resumed namespace sleepy-dev: Deployment web 0 → 3/,
    );
    expect(stdout).toMatch(/resumed: deployment web back at 3 replicas/);
    const after = stdout.slice(stdout.indexOf('the cluster afterwards'));
    expect(after).toMatch(/^team-foreign +Active/m);
    expect(after).toMatch(/^builds-shared +Active/m);
    expect(after).not.toMatch(/^builds-dev /m);
    expect(stdout).toMatch(/Admin token: +tend_\S+/);
  }, 240_000);
});
