/** The README's demo, run to the end (`--exit`): it records the example environments in its server. */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../helpers/project.js';

describe('npm run demo', () => {
  it('deploys the examples against kube-sim and a server, and prints the dashboard URL and a token', async () => {
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
  }, 180_000);
});
