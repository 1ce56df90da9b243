/**
 * `tend agent --health-port`, what deploy/agent's probes ask: `/readyz` answers 200 once a pass
 * went through (heartbeat, inventory) and 503 when the last one could not reach the server;
 * `/healthz` answers 200 while passes keep ending and 503 once none has ended for its stale
 * bound (a clock the test moves); nothing else is served. Bad usage is refused clearly.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHealth, staleAfterMs } from '../../src/executor/health.js';
import { freePort, runTend, startTend, waitFor } from '../helpers/project.js';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { createTestServer } from '../server/helpers.js';

let handle: SimHandle;
const scratch = mkdtempSync(path.join(tmpdir(), 'tend-agent-health-'));
const noLogin = { TEND_CONFIG_DIR: path.join(scratch, 'no-login'), TEND_SERVER_URL: '', TEND_TOKEN: '' };

beforeAll(async () => {
  handle = await startSim({ namespaceDeleteDelayMs: 20 });
  delete process.env.KUBECONFIG;
});
afterAll(async () => {
  await handle.stop();
  rmSync(scratch, { recursive: true, force: true });
});

async function probe(port: number, route: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`);
  return { status: res.status, text: await res.text() };
}

describe('tend agent --health-port', () => {
  it('is ready once a pass went through, and not after one that could not reach the server', async () => {
    const server = await createTestServer('sqlite', { cleanup: { intervalMs: 1000 } });
    const url = await server.app.listen({ port: 0, host: '127.0.0.1' });
    const tokenFile = path.join(scratch, 'agent-token');
    writeFileSync(tokenFile, server.tokens.agent, { mode: 0o600 });
    const port = await freePort();
    const agent = startTend(
      [
        'agent',
        '--server',
        url,
        '--token-file',
        tokenFile,
        '--kubeconfig',
        handle.kubeconfig,
        '--interval',
        '1s',
        '--health-port',
        String(port),
      ],
      { env: noLogin },
    );
    try {
      await agent.waitForOutput(/health checks on port \d+/, 'the health checks to listen');
      await waitFor(async () => (await probe(port, '/readyz')).status === 200, 'the agent to be ready');
      expect(await probe(port, '/healthz')).toEqual({ status: 200, text: 'ok\n' });
      expect((await probe(port, '/metrics')).status).toBe(404);
      await server.close();
      const unready = await waitFor(
        async () => {
          const r = await probe(port, '/readyz');
          return r.status === 503 ? r : undefined;
          // Its heartbeat is retried with backoff first (up to about 16 s).
        },
        'the agent to see the server gone',
        45_000,
      );
      expect(unready.text).toMatch(/^the last pass failed: /);
      // Still alive: its passes end, with an error.
      expect((await probe(port, '/healthz')).status).toBe(200);
    } finally {
      agent.signal('SIGTERM');
      await agent.exited;
    }
  }, 60_000);

  it('fails liveness once no pass has ended for its stale bound', async () => {
    let now = 1_000_000;
    const health = new AgentHealth(staleAfterMs(30_000), () => now);
    const { server, port } = await health.listen(0, '127.0.0.1');
    try {
      expect(await probe(port, '/readyz')).toEqual({ status: 503, text: 'no pass has ended yet\n' });
      health.passEnded({ targets: [], inventories: [], jobs: [], errors: [] });
      expect((await probe(port, '/readyz')).status).toBe(200);
      now += staleAfterMs(30_000) - 1;
      expect((await probe(port, '/healthz')).status).toBe(200);
      now += 1;
      expect(await probe(port, '/healthz')).toEqual({ status: 503, text: 'no pass has ended for 1890 s\n' });
    } finally {
      server.close();
    }
  });

  it.each([
    [['--health-port', '70000'], /--health-port expects a whole number from 0 to 65535, got "70000"/],
    [['--health-port', 'http'], /--health-port expects a whole number/],
    [
      ['--health-port', '9000', '--once'],
      /--health-port answers the probes of a running agent: not with --once/,
    ],
  ])('refuses bad usage clearly: %j', async (extra, message) => {
    const run = await runTend(['agent', '--server', 'http://127.0.0.1:1', '--token', 't', ...extra], {
      env: noLogin,
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
