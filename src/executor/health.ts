/**
 * `tend agent --health-port`: the agent's answers to Kubernetes probes, on all interfaces of that
 * port, and nothing else (no data, no other path).
 *
 * - `/healthz` (liveness): 200 while passes keep ending — the last one ended, or the agent
 *   started, less than `staleMs` ago; a pass stuck longer (a connection that hangs) answers 503,
 *   and the kubelet restarts the agent, whose leases then return its jobs.
 * - `/readyz` (readiness): 200 once the last pass went through without an error outside a job
 *   (targets found, heartbeat, inventories, claims: the server and the cluster answered); 503
 *   before the first pass and after one that did not.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PassReport } from './executor.js';

/** How long without an ended pass before liveness fails: half an hour beyond three intervals. */
export function staleAfterMs(intervalMs: number): number {
  return 30 * 60_000 + 3 * intervalMs;
}

export class AgentHealth {
  private lastPassEndedAt: number;
  private lastPassErrors: readonly string[] | undefined;

  constructor(
    private readonly staleMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.lastPassEndedAt = now();
  }

  passEnded(report: PassReport): void {
    this.lastPassEndedAt = this.now();
    this.lastPassErrors = report.errors;
  }

  /** `/healthz`: whether a pass ended within `staleMs`, and what to say. */
  liveness(): { ok: boolean; message: string } {
    const since = this.now() - this.lastPassEndedAt;
    return since < this.staleMs
      ? { ok: true, message: 'ok' }
      : { ok: false, message: `no pass has ended for ${Math.round(since / 1000)} s` };
  }

  /** `/readyz`: whether the last pass went through without an error outside a job. */
  readiness(): { ok: boolean; message: string } {
    if (this.lastPassErrors === undefined) return { ok: false, message: 'no pass has ended yet' };
    if (this.lastPassErrors.length > 0)
      return { ok: false, message: `the last pass failed: ${this.lastPassErrors.join('; ')}` };
    return { ok: true, message: 'ok' };
  }

  /** Serves the two paths on `port` (0: any free one); resolves once it listens. */
  async listen(port: number, host = '0.0.0.0'): Promise<{ server: Server; port: number }> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const answer =
        req.method !== 'GET' && req.method !== 'HEAD'
          ? undefined
          : path === '/healthz'
            ? this.liveness()
            : path === '/readyz'
              ? this.readiness()
              : undefined;
      const status = answer === undefined ? 404 : answer.ok ? 200 : 503;
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : `${answer?.message ?? 'not found'}\n`);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return { server, port: (server.address() as AddressInfo).port };
  }
}
