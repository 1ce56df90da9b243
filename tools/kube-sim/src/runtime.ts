/**
 * The simulated kubelet: moves pods Pending → Running → Succeeded/Failed according to the
 * rule table, keeps each container's log, and lets attach feed stdin to builder containers.
 */
import type { Cluster } from './cluster.js';
import { now } from './cluster.js';
import { missingReference, type Missing } from './references.js';
import { POD } from './resources.js';
import type { Behaviour, ContainerSpec, PodRule } from './rules.js';
import { resolveBehaviour } from './rules.js';
import type { KObject } from './types.js';
import { ApiError, badRequest, notFound } from './types.js';

export interface LogLine {
  time: string;
  text: string;
}

export class LogBuffer {
  readonly lines: LogLine[] = [];
  ended = false;
  private readonly listeners = new Set<(line: LogLine | null) => void>();

  write(text: string): void {
    if (this.ended) return;
    for (const t of text.replace(/\n$/, '').split('\n')) {
      const line = { time: new Date().toISOString(), text: t };
      this.lines.push(line);
      for (const l of this.listeners) l(line);
    }
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const l of this.listeners) l(null);
    this.listeners.clear();
  }

  subscribe(fn: (line: LogLine | null) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

interface ContainerState {
  spec: ContainerSpec;
  behaviour: Behaviour;
  state: 'waiting' | 'running' | 'terminated';
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  restartCount: number;
  crashLoop?: boolean;
  log: LogBuffer;
  /** Set when an attach session is feeding this (builder) container. */
  attached?: boolean;
}

interface PodState {
  namespace: string;
  name: string;
  uid: string;
  containers: Map<string, ContainerState>;
  timers: Set<NodeJS.Timeout>;
  running: boolean;
  deleted: boolean;
  /** What the pod waits for before its containers start (a Secret, a claim…: references.ts). */
  missing?: Missing;
}

export interface RuntimeOptions {
  podStartDelayMs: number;
  podRunMs: number;
  rules: PodRule[];
}

let ipCounter = 2;

export class PodRuntime {
  private readonly pods = new Map<string, PodState>();
  /** Logs outlive pods briefly so that `kubectl logs` right after deletion still finds them. */
  private readonly byName = new Map<string, PodState>();

  constructor(
    private readonly cluster: Cluster,
    private readonly opts: RuntimeOptions,
  ) {}

  private later(p: PodState, ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      p.timers.delete(t);
      if (!p.deleted) fn();
    }, ms);
    p.timers.add(t);
  }

  podAdded(pod: KObject): void {
    const uid = pod.metadata.uid!;
    if (this.pods.has(uid)) return;
    const containers = new Map<string, ContainerState>();
    for (const c of (pod.spec?.containers ?? []) as ContainerSpec[]) {
      containers.set(c.name, {
        spec: c,
        behaviour: resolveBehaviour(pod, c, this.opts.rules, { runMs: this.opts.podRunMs }),
        state: 'waiting',
        restartCount: 0,
        log: new LogBuffer(),
      });
    }
    const p: PodState = {
      namespace: pod.metadata.namespace!,
      name: pod.metadata.name!,
      uid,
      containers,
      timers: new Set(),
      running: false,
      deleted: false,
    };
    this.pods.set(uid, p);
    this.byName.set(`${p.namespace}/${p.name}`, p);
    this.later(p, 0, () => this.schedule(p));
  }

  podDeleted(pod: KObject): void {
    const p = this.pods.get(pod.metadata.uid!);
    if (!p) return;
    p.deleted = true;
    for (const t of p.timers) clearTimeout(t);
    p.timers.clear();
    for (const c of p.containers.values()) c.log.end();
    this.pods.delete(p.uid);
  }

  stop(): void {
    for (const p of this.pods.values()) {
      p.deleted = true;
      for (const t of p.timers) clearTimeout(t);
      for (const c of p.containers.values()) c.log.end();
    }
    this.pods.clear();
  }

  private schedule(p: PodState): void {
    const podIP = `10.244.${(ipCounter >> 8) & 255}.${ipCounter++ & 255}`;
    const ts = now();
    this.cluster.mutate(POD, p.namespace, p.name, (o) => {
      o.spec.nodeName = 'kube-sim-node';
      o.status = {
        ...o.status,
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: ts }],
        hostIP: '10.0.0.1',
        hostIPs: [{ ip: '10.0.0.1' }],
        podIP,
        podIPs: [{ ip: podIP }],
        startTime: ts,
      };
    });
    this.writeStatus(p);
    this.startWhenReady(p);
  }

  /** Starts the containers once the pod has what it references; looks again every 100 ms until then. */
  private startWhenReady(p: PodState): void {
    const pod = this.cluster.store.get(POD, p.namespace, p.name);
    if (!pod) return;
    const missing = missingReference(this.cluster.store, pod);
    if (missing) {
      if (missing.message !== p.missing?.message) {
        p.missing = missing;
        this.writeStatus(p);
      }
      this.later(p, 100, () => this.startWhenReady(p));
      return;
    }
    if (p.missing) {
      delete p.missing;
      this.writeStatus(p);
    }
    const pullError = [...p.containers.values()].find((c) => c.behaviour.imagePullError);
    if (pullError) return;
    const starts = [...p.containers.values()].map((c) => c.behaviour.startMs ?? this.opts.podStartDelayMs);
    this.later(p, Math.max(0, ...starts), () => this.start(p));
  }

  private start(p: PodState): void {
    p.running = true;
    for (const c of p.containers.values()) {
      c.state = 'running';
      c.startedAt = now();
      const b = c.behaviour;
      if (b.logIntervalMs > 0) {
        b.logs.forEach((line, i) => this.later(p, b.logIntervalMs * (i + 1), () => c.log.write(line)));
      } else for (const line of b.logs) c.log.write(line);
      if (b.runMs !== null && !b.builder) {
        const logTime = b.logIntervalMs * b.logs.length;
        this.later(p, Math.max(b.runMs, logTime), () => this.terminate(p, c, b.exitCode));
      }
    }
    this.writeStatus(p);
  }

  private terminate(p: PodState, c: ContainerState, exitCode: number): void {
    const restartPolicy = this.cluster.store.get(POD, p.namespace, p.name)?.spec?.restartPolicy ?? 'Always';
    c.exitCode = exitCode;
    c.finishedAt = now();
    if (restartPolicy === 'Always') {
      // The kubelet would restart it; the simulator reports the back-off and stops there.
      c.restartCount++;
      c.crashLoop = true;
      c.state = 'waiting';
    } else {
      c.state = 'terminated';
      c.log.end();
    }
    this.writeStatus(p);
  }

  private writeStatus(p: PodState): void {
    const cs = [...p.containers.values()];
    const ts = now();
    this.cluster.mutate(
      POD,
      p.namespace,
      p.name,
      (o) => {
        const st = o.status;
        const statuses = cs.map((c) => {
          let state: Record<string, unknown>;
          let lastState: Record<string, unknown> = {};
          const terminated = {
            exitCode: c.exitCode,
            reason: c.exitCode === 0 ? 'Completed' : 'Error',
            startedAt: c.startedAt,
            finishedAt: c.finishedAt,
            containerID: `containerd://${p.uid.replace(/-/g, '')}${c.spec.name}`,
          };
          if (c.state === 'running') state = { running: { startedAt: c.startedAt } };
          else if (c.state === 'terminated') state = { terminated };
          else if (c.crashLoop) {
            state = {
              waiting: {
                reason: 'CrashLoopBackOff',
                message: `back-off 10s restarting failed container=${c.spec.name} pod=${p.name}_${p.namespace}(${p.uid})`,
              },
            };
            lastState = { terminated };
          } else if (p.missing) {
            state = { waiting: { reason: p.missing.reason, message: p.missing.message } };
          } else if (c.behaviour.imagePullError) {
            state = {
              waiting: {
                reason: 'ErrImagePull',
                message: `failed to pull and unpack image "${c.spec.image}": not found (kube-sim)`,
              },
            };
          } else state = { waiting: { reason: 'ContainerCreating' } };
          return {
            name: c.spec.name,
            image: c.spec.image,
            imageID: c.state === 'waiting' && !c.crashLoop ? '' : `${c.spec.image}@sha256:${'0'.repeat(64)}`,
            ...(c.state !== 'waiting' || c.crashLoop ? { containerID: terminated.containerID } : {}),
            state,
            lastState,
            ready: c.state === 'running' && c.behaviour.ready,
            started: c.state === 'running',
            restartCount: c.restartCount,
          };
        });
        const allReady = statuses.every((s) => s.ready);
        const allDone = cs.every((c) => c.state === 'terminated');
        let phase = st.phase ?? 'Pending';
        if (allDone) phase = cs.every((c) => c.exitCode === 0) ? 'Succeeded' : 'Failed';
        else if (p.running) phase = 'Running';
        const cond = (type: string, ok: boolean, reason?: string): Record<string, unknown> => {
          const prev = (st.conditions ?? []).find((x: { type: string }) => x.type === type);
          const status = ok ? 'True' : 'False';
          return {
            type,
            status,
            lastProbeTime: null,
            lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : ts,
            ...(reason && !ok ? { reason } : {}),
          };
        };
        const conditions = [
          cond('PodReadyToStartContainers', p.running),
          cond('Initialized', true),
          cond('Ready', allReady && !allDone, allDone ? 'PodCompleted' : 'ContainersNotReady'),
          cond('ContainersReady', allReady && !allDone, allDone ? 'PodCompleted' : 'ContainersNotReady'),
          cond('PodScheduled', true),
        ];
        o.status = { ...st, phase, conditions, containerStatuses: statuses };
      },
      'status',
    );
  }

  private state(namespace: string, name: string): PodState {
    const p = this.byName.get(`${namespace}/${name}`);
    if (!p) throw notFound('', 'pods', name);
    return p;
  }

  private container(namespace: string, name: string, container?: string): ContainerState {
    const p = this.state(namespace, name);
    if (!container) {
      if (p.containers.size !== 1) {
        throw badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${[...p.containers.keys()].join(' ')}]`,
        );
      }
      return p.containers.values().next().value as ContainerState;
    }
    const c = p.containers.get(container);
    if (!c) throw badRequest(`container ${container} is not valid for pod ${name}`);
    return c;
  }

  /** The log of a container, for `pods/log`. Waiting containers have no log yet. */
  log(namespace: string, name: string, container?: string): LogBuffer {
    const c = this.container(namespace, name, container);
    if (c.state === 'waiting' && !c.startedAt) {
      const reason = c.behaviour.imagePullError ? 'trying and failing to pull image' : 'ContainerCreating';
      throw badRequest(`container "${c.spec.name}" in pod "${name}" is waiting to start: ${reason}`);
    }
    return c.log;
  }

  /** Checks made before upgrading an exec or attach connection. */
  assertRunning(
    namespace: string,
    name: string,
    container: string | undefined,
    verb: 'exec' | 'attach',
  ): ContainerState {
    const pod = this.cluster.store.get(POD, namespace, name);
    if (!pod) throw notFound('', 'pods', name);
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') {
      throw badRequest(`cannot ${verb} into a container in a completed pod; current phase is ${phase}`);
    }
    const c = this.container(namespace, name, container);
    if (c.state !== 'running') throw badRequest(`container ${c.spec.name} is not valid for pod ${name}`);
    return c;
  }

  behaviour(namespace: string, name: string, container?: string): Behaviour {
    return this.container(namespace, name, container).behaviour;
  }

  /** Claim a builder container for an attach session: only one session may feed its stdin. */
  claimBuilder(
    namespace: string,
    name: string,
    container?: string,
  ): { args: string[]; finish: (exitCode: number) => void; log: LogBuffer } | undefined {
    const p = this.state(namespace, name);
    const c = this.container(namespace, name, container);
    if (c.behaviour.builder !== 'kaniko') return undefined;
    if (c.attached)
      throw new ApiError(409, 'Conflict', `container ${c.spec.name} already has an attached stdin session`);
    c.attached = true;
    return {
      args: [...(c.spec.command ?? []), ...(c.spec.args ?? [])],
      log: c.log,
      finish: (exitCode) => {
        if (!p.deleted && c.state === 'running') this.terminate(p, c, exitCode);
      },
    };
  }
}
