/**
 * Pods: create (recognising a retried create by its request id), read, delete, list, their
 * events and logs, exec and attach. Every call goes through the request gate.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { TendError } from '../../../errors.js';
import { describeFailure } from './errors.js';
import type { RequestGate } from './gate.js';
import { annotations } from './namespace-info.js';
import type { CoreV1Event, List, V1Pod, V1Status } from './wire.js';

export interface ExecStreams {
  /** A fresh stdin for each attempt (a retried exec sends it again). */
  stdin?: () => Readable;
  onStdout?: (line: string) => void;
  onStderr?: (line: string) => void;
}

export class PodCalls {
  constructor(private readonly gate: RequestGate) {}

  /** Creates a pod; a retried create that had already succeeded is recognised by its request id. */
  async create(namespace: string, pod: V1Pod): Promise<V1Pod> {
    const requestId = randomBytes(8).toString('hex');
    const body: V1Pod = {
      ...pod,
      metadata: {
        ...pod.metadata,
        namespace,
        annotations: { ...pod.metadata?.annotations, [annotations.requestId]: requestId },
      },
    };
    const name = body.metadata!.name!;
    let attempt = 0;
    return this.gate.request(
      namespace,
      `create pod ${name} in ${namespace}`,
      async () => {
        attempt++;
        try {
          return await this.gate.connection.request<V1Pod>({
            method: 'POST',
            path: podsPath(namespace),
            body,
          });
        } catch (error) {
          if (attempt > 1 && describeFailure(error).status === 409) {
            const existing = await this.gate.connection.request<V1Pod>({
              method: 'GET',
              path: podsPath(namespace, name),
            });
            if (existing.metadata?.annotations?.[annotations.requestId] === requestId) return existing;
          }
          throw error;
        }
      },
      true,
    );
  }

  read(namespace: string, name: string): Promise<V1Pod | undefined> {
    return this.gate.requestOptional(namespace, `read pod ${name} in ${namespace}`, () =>
      this.gate.connection.request<V1Pod>({ method: 'GET', path: podsPath(namespace, name) }),
    );
  }

  async delete(namespace: string, name: string): Promise<void> {
    await this.gate.requestOptional(namespace, `delete pod ${name} in ${namespace}`, () =>
      this.gate.connection.request({
        method: 'DELETE',
        path: podsPath(namespace, name),
        query: { gracePeriodSeconds: 0 },
      }),
    );
  }

  /** Deletes the pod and waits (bounded) until it is gone, so nothing is left behind. */
  async remove(namespace: string, name: string, timeoutMs = 30_000): Promise<void> {
    await this.delete(namespace, name);
    const deadline = Date.now() + timeoutMs;
    while ((await this.read(namespace, name)) && Date.now() < deadline) await delay(100);
  }

  async list(namespace: string, labelSelector?: string): Promise<V1Pod[]> {
    const list = await this.gate.request(namespace, `list pods in ${namespace}`, () =>
      this.gate.connection.request<List<V1Pod>>({
        method: 'GET',
        path: podsPath(namespace),
        query: { labelSelector },
      }),
    );
    return list.items;
  }

  async listEvents(namespace: string, fieldSelector?: string): Promise<CoreV1Event[]> {
    const list = await this.gate.request(namespace, `list events in ${namespace}`, () =>
      this.gate.connection.request<List<CoreV1Event>>({
        method: 'GET',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        query: { fieldSelector },
      }),
    );
    return list.items;
  }

  /**
   * Reads a container's log, line by line: all of it, or its last `tailLines`, then — with
   * `follow` (the default) — new lines until it ends or `stop` aborts. `done` resolves when the
   * stream ends; a log that cannot be opened (a container still waiting) rejects.
   */
  async streamLog(
    namespace: string,
    pod: string,
    container: string,
    onLine: (line: string) => void,
    options: { follow?: boolean; tailLines?: number; timestamps?: boolean } = {},
  ): Promise<{ done: Promise<void>; stop: () => void }> {
    const sink = lineWriter(onLine);
    const done = new Promise<void>((resolve) => {
      sink.on('finish', resolve);
      sink.on('close', resolve);
      sink.on('error', () => resolve());
    });
    const { follow = true, tailLines, timestamps = false } = options;
    if (tailLines === 0 && !follow) {
      sink.end();
      return { done, stop: () => {} };
    }
    const controller = new AbortController();
    const query = {
      container,
      follow,
      timestamps,
      // Following only new lines is asking for those from now (the API leaves out `tailLines=0`).
      ...(tailLines === 0 ? { sinceTime: new Date().toISOString() } : {}),
      ...(tailLines ? { tailLines } : {}),
    };
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log`;
    const response = await this.gate.request(namespace, `read the log of pod ${pod} in ${namespace}`, () =>
      this.gate.connection.stream({ method: 'GET', path, query }, controller.signal),
    );
    // Stopped (or the connection lost): the lines so far are written, the log ends there.
    response.on('error', () => sink.end());
    response.pipe(sink);
    return {
      done,
      stop: () => {
        controller.abort();
        sink.end();
      },
    };
  }

  /** Runs a command in a container (pods/exec) and returns its exit code. */
  async exec(
    namespace: string,
    pod: string,
    container: string,
    command: string[],
    streams: ExecStreams,
    idempotent = false,
  ): Promise<number> {
    const what = `exec \`${command.join(' ')}\` in pod ${pod} (${namespace})`;
    return this.gate.request(
      namespace,
      what,
      async () => {
        const out = lineWriter(streams.onStdout ?? (() => {}));
        const err = lineWriter(streams.onStderr ?? (() => {}));
        let status: V1Status | undefined;
        const { exec } = await this.gate.connection.streams();
        const ws = await exec.exec(
          namespace,
          pod,
          container,
          command,
          out,
          err,
          streams.stdin ? streams.stdin() : null,
          false,
          (s) => (status = s as V1Status),
        );
        await new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) resolve();
          ws.on('close', () => resolve());
        });
        out.end();
        err.end();
        if (!status) {
          throw Object.assign(new Error(`${what}: the connection closed before the command finished`), {
            code: 'ECONNRESET',
          });
        }
        return exitCodeOf(status);
      },
      idempotent,
    );
  }

  /** Attaches to a running container, feeding it stdin and reading its output until it ends. */
  async attach(namespace: string, pod: string, container: string, streams: ExecStreams): Promise<void> {
    const what = `attach to pod ${pod} (${namespace})`;
    await this.gate.request(
      namespace,
      what,
      async () => {
        const out = lineWriter(streams.onStdout ?? (() => {}));
        const err = lineWriter(streams.onStderr ?? (() => {}));
        const { attach } = await this.gate.connection.streams();
        const ws = await attach.attach(
          namespace,
          pod,
          container,
          out,
          err,
          streams.stdin ? streams.stdin() : null,
          false,
        );
        await new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) resolve();
          ws.on('close', () => resolve());
        });
        out.end();
        err.end();
      },
      false,
    );
  }
}

function exitCodeOf(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  if (Number.isInteger(code)) return code;
  throw new TendError('TEND_K8S_API', `exec failed: ${status.message ?? status.reason ?? 'unknown error'}`);
}

/** A writable that calls `onLine` for each complete line (and the rest at the end). */
function lineWriter(onLine: (line: string) => void): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      const text = rest + chunk.toString();
      const lines = text.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      callback();
    },
    final(callback) {
      if (rest) onLine(rest);
      rest = '';
      callback();
    },
  });
}

/** The URL path of a namespace's pods, or of one of them. */
function podsPath(namespace: string, name?: string): string {
  const pods = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  return name === undefined ? pods : `${pods}/${encodeURIComponent(name)}`;
}
