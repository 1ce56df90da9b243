/**
 * The README's demo, run as a user runs it: it records the example environments in its server,
 * and its embedded executor deletes the idle builds-only namespace on its own once the policy is
 * enforced, leaving the foreign and the adopted namespace. While it waits for Ctrl-C, the "Try:"
 * lines it printed are run as printed, against its server on the port given with `--port`.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort, repoRoot } from '../helpers/project.js';

/** A demo a failed or timed-out test leaves running is stopped as Ctrl-C stops it (its cleanup runs). */
function stopWhenFinished(child: ChildProcess): void {
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  });
}

describe('npm run demo', () => {
  it('deploys the examples, cleans up the idle builds-only environment automatically, and prints the dashboard URL and tokens', async () => {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'scripts', 'demo.ts'), '--port', String(port)],
      {
        cwd: repoRoot,
        env: { ...process.env, CI: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    stopWhenFinished(child);
    let stdout = '';
    let stderr = '';
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    const waiting = new Promise<void>((resolve) => {
      child.stdout.on('data', (d) => {
        stdout += d;
        if (stdout.includes('Press Ctrl-C to stop the demo.')) resolve();
      });
    });
    child.stderr.on('data', (d) => (stderr += d));
    const ended = await Promise.race([waiting.then(() => false), closed.then(() => true)]);
    expect(ended, stderr).toBe(false);

    // The Try block, exactly as printed, in a shell at the repository's root.
    const tryBlock = stdout
      .slice(stdout.indexOf('Try (while the demo runs'))
      .split('\n')
      .slice(1)
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('Press Ctrl-C'));
    expect(tryBlock).toHaveLength(4);
    const tried = spawnSync('bash', ['-euo', 'pipefail', '-c', tryBlock.join('\n')], {
      cwd: repoRoot,
      env: { ...process.env, TEND_SERVER_URL: '', TEND_TOKEN: '', KUBECONFIG: '', CI: 'true' },
      encoding: 'utf8',
    });
    expect(tried.status, tried.stderr).toBe(0);
    // Both status commands reach the demo's server: each prints the environment's cleanup line.
    expect(tried.stdout.match(/^cleanup: /gm)).toHaveLength(2);
    expect(tried.stdout).toMatch(/^project local-shop, environment dev/m);
    expect(tried.stdout).toMatch(/^project shop, environment dev/m);
    expect(tried.stdout).toMatch(/^shop-\S+ +Active +.*app\.kubernetes\.io\/managed-by=tend/m);

    child.kill('SIGINT');
    const code = await closed;
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(new RegExp(`Dashboard: +http://127\\.0\\.0\\.1:${port}/`));
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
    const after = stdout.slice(
      stdout.indexOf('the cluster afterwards'),
      stdout.indexOf('undo: `tend restore`'),
    );
    expect(after).toMatch(/^team-foreign +Active/m);
    expect(after).toMatch(/^builds-shared +Active/m);
    expect(after).not.toMatch(/^builds-dev /m);
    expect(stdout).toMatch(/Admin token: +tend_\S+/);
    // Undo: the archive taken before the deletion, restored into builds-dev, recorded by the session.
    expect(stdout).toMatch(/restorable until +\S+Z \(archive of namespace builds-dev: \d+ object\(s\)/);
    expect(stdout).toMatch(
      /^restored environment builds\/dev into namespace builds-dev from the archive of /m,
    );
    expect(stdout).toMatch(/^ {2}restored {2}ConfigMap\/build-settings$/m);
  }, 240_000);

  it('with --exit tears everything down and prints no dashboard URL, tokens or commands to try', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'scripts', 'demo.ts'), '--exit'],
      {
        cwd: repoRoot,
        env: { ...process.env, CI: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    stopWhenFinished(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, stderr).toBe(0);
    // The run itself happened, restore included…
    expect(stdout).toMatch(
      /^restored environment builds\/dev into namespace builds-dev from the archive of /m,
    );
    expect(stdout).toContain('cleaning up: stopping the local-shop service, kube-sim and the server');
    // …but nothing points at the server it stopped.
    expect(stdout).not.toMatch(/Dashboard:|Read token:|Admin token:|Try \(while the demo runs|Press Ctrl-C/);
  }, 240_000);
});
