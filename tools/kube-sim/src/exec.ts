/**
 * pods/exec and pods/attach over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io` and the
 * older channel protocols): byte 0 of each frame is the channel — 0 stdin, 1 stdout, 2 stderr,
 * 3 status, 4 resize, 255 close (v5 only).
 */
import type { IncomingMessage } from 'node:http';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import type { WebSocket } from 'ws';
import { WebSocketServer } from 'ws';
import { runBuild } from './builder.js';
import { queryFlag } from './query.js';
import type { Registry } from './registry.js';
import type { PodRuntime } from './runtime.js';
import { runCommand } from './shell.js';

const PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
];

export interface ExecContext {
  runtime: PodRuntime;
  registry: Registry;
  registryHosts: () => string[];
  scratchDir: (namespace: string, pod: string) => Promise<string>;
}

export interface StreamRequest {
  kind: 'exec' | 'attach';
  namespace: string;
  pod: string;
  query: URLSearchParams;
}

const wss = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  handleProtocols: (offered) => PROTOCOLS.find((p) => offered.has(p)) ?? false,
});

export function statusFor(exitCode: number, argv: string[]): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${argv.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

class Session {
  readonly stdin = new PassThrough();
  private closed = false;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      if (data.length === 0) return;
      const channel = data[0]!;
      if (channel === 0) {
        if (data.length > 1 && !this.stdin.writableEnded) this.stdin.write(data.subarray(1));
      } else if (channel === 255 && data[1] === 0) this.stdin.end();
    });
    ws.on('close', () => {
      this.closed = true;
      if (!this.stdin.writableEnded) this.stdin.end();
    });
    ws.on('error', () => {
      this.closed = true;
    });
  }

  /**
   * Frames go out one at a time, each after the previous one reached the socket, so that each is
   * its own TLS record as with a real API server. Clients that poll the socket before reading
   * one frame (the Python client's `update()`) otherwise never see a frame that arrived in the
   * same record as the one before it — typically the close after the exit status.
   */
  private outgoing: Promise<void> = Promise.resolve();

  private enqueue(write: (done: () => void) => void): void {
    this.outgoing = this.outgoing.then(
      () =>
        new Promise<void>((resolve) => {
          if (this.closed || this.ws.readyState !== this.ws.OPEN) return resolve();
          write(resolve);
        }),
    );
  }

  send(channel: number, data: Buffer | string): void {
    const body = typeof data === 'string' ? Buffer.from(data) : data;
    if (body.length === 0 || this.closed) return;
    const frame = Buffer.concat([Buffer.from([channel]), body]);
    this.enqueue((done) => this.ws.send(frame, () => done()));
  }

  finish(status: Record<string, unknown>): void {
    this.send(3, JSON.stringify(status));
    this.enqueue((done) => {
      this.ws.close(1000);
      done();
    });
  }
}

export function upgrade(
  ctx: ExecContext,
  r: StreamRequest,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  wss.handleUpgrade(req, socket, head, (ws) => {
    const session = new Session(ws);
    const run = r.kind === 'exec' ? runExec(ctx, r, session) : runAttach(ctx, r, session);
    run.catch((e: Error) =>
      session.finish({
        metadata: {},
        status: 'Failure',
        message: e.message,
        reason: 'InternalError',
        code: 500,
      }),
    );
  });
}

async function runExec(ctx: ExecContext, r: StreamRequest, s: Session): Promise<void> {
  const argv = r.query.getAll('command');
  const wantStdin = queryFlag(r.query, 'stdin');
  if (!wantStdin) s.stdin.end();
  const root = await ctx.scratchDir(r.namespace, r.pod);
  await mkdir(root, { recursive: true });
  const tty = queryFlag(r.query, 'tty');
  const code = await runCommand(argv, {
    stdin: s.stdin,
    stdout: (d) => s.send(1, d),
    stderr: (d) => s.send(tty ? 1 : 2, d),
    root,
    cwd: '/',
    registry: ctx.registry,
    registryHosts: ctx.registryHosts(),
    env: {
      HOME: '/root',
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOSTNAME: r.pod,
    },
  });
  s.finish(statusFor(code, argv));
}

/** The executor's flags (Kaniko 1.x) that kube-sim knows; any other is Kaniko's usage error. */
const kanikoFlags = new Set(
  [
    'context',
    'dockerfile',
    'destination',
    'build-arg',
    'target',
    'insecure',
    'insecure-pull',
    'skip-tls-verify',
    'skip-tls-verify-pull',
    'digest-file',
    'image-name-with-digest-file',
    'no-push',
    'cache',
    'cache-repo',
    'cache-dir',
    'cache-ttl',
    'cache-copy-layers',
    'cache-run-layers',
    'snapshot-mode',
    'single-snapshot',
    'use-new-run',
    'compressed-caching',
    'reproducible',
    'cleanup',
    'label',
    'verbosity',
    'log-format',
    'log-timestamp',
    'registry-mirror',
    'push-retry',
    'ignore-path',
    'custom-platform',
    'skip-unused-stages',
    'tar-path',
    'oci-layout-path',
    'kaniko-dir',
    'force',
  ].map((name) => `--${name}`),
);

function flag(args: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === `--${name}`) out.push(args[++i] ?? '');
    else if (a.startsWith(`--${name}=`)) out.push(a.slice(name.length + 3));
  }
  return out;
}

async function runAttach(ctx: ExecContext, r: StreamRequest, s: Session): Promise<void> {
  const container = r.query.get('container') ?? undefined;
  const wantStdin = queryFlag(r.query, 'stdin');
  const builder = wantStdin ? ctx.runtime.claimBuilder(r.namespace, r.pod, container) : undefined;
  if (!builder) {
    // Plain attach: stream what the container writes from now on until it ends.
    s.stdin.resume();
    const log = ctx.runtime.log(r.namespace, r.pod, container);
    if (log.ended) return s.finish({ metadata: {}, status: 'Success' });
    await new Promise<void>((resolve) => {
      const off = log.subscribe((line) => {
        if (line === null) {
          off();
          resolve();
        } else s.send(1, `${line.text}\n`);
      });
      s.ws.on('close', () => {
        off();
        resolve();
      });
    });
    return s.finish({ metadata: {}, status: 'Success' });
  }
  // Kaniko: the build context arrives as a tar stream on stdin.
  const args = builder.args;
  const out = (line: string): void => {
    builder.log.write(line);
    s.send(1, `${line}\n`);
  };
  const err = (line: string): void => {
    builder.log.write(line);
    s.send(2, `${line}\n`);
  };
  const root = await ctx.scratchDir(r.namespace, r.pod);
  const contextDir = join(root, 'kaniko', 'buildcontext');
  await mkdir(contextDir, { recursive: true });
  const context = flag(args, 'context')[0] ?? '';
  let exitCode: number;
  const unknown = args.find((a) => a.startsWith('-') && !kanikoFlags.has(a.replace(/=.*$/, '')));
  if (unknown !== undefined) {
    // As Kaniko (cobra) answers a flag it does not define, before reading the context.
    err(`Error: unknown flag: ${unknown.replace(/=.*$/, '')}`);
    s.stdin.resume();
    exitCode = 1;
  } else if (context !== 'tar://stdin') {
    err(`kube-sim: only --context tar://stdin is simulated for Kaniko (got "${context}")`);
    s.stdin.resume();
    exitCode = 1;
  } else {
    try {
      await pipeline(s.stdin, tar.x({ cwd: contextDir }));
      const dockerfile = join(contextDir, flag(args, 'dockerfile')[0] ?? 'Dockerfile');
      const noPush = args.includes('--no-push');
      const result = await runBuild(
        {
          contextDir,
          dockerfile,
          destinations: noPush ? [] : flag(args, 'destination'),
          registryHosts: ctx.registryHosts(),
          style: 'kaniko',
          out,
          err,
        },
        ctx.registry,
      );
      exitCode = result.exitCode;
    } catch (e) {
      err(`error building image: reading build context from stdin: ${(e as Error).message}`);
      exitCode = 1;
    }
  }
  builder.finish(exitCode);
  s.finish({ metadata: {}, status: 'Success' });
}
