/**
 * How a simulated container behaves: how long it runs, its exit code and its log output.
 * Per-pod annotations win over the rule table; the first matching rule wins otherwise.
 */
import type { KObject } from './types.js';

export const ANNOTATION_PREFIX = 'kube-sim.tend.dev/';
/** Placeholder a rule returns for "the simulator's default run time". */
export const DEFAULT_RUN = -2;

export interface ContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
}

export interface Behaviour {
  /** Milliseconds from Running to exit; `null` runs until the pod is deleted. */
  runMs: number | null;
  exitCode: number;
  logs: string[];
  /** Milliseconds between log lines; 0 writes them all when the container starts. */
  logIntervalMs: number;
  /** Pending time before the container starts (overrides the simulator default). */
  startMs?: number;
  /** Whether the container reports ready while running. */
  ready: boolean;
  /** `ErrImagePull`: the pod never leaves Pending. */
  imagePullError?: string;
  /** The container waits for stdin over attach and runs the simulated builder (Kaniko). */
  builder?: 'kaniko';
}

export interface PodRule {
  /** Matched against the image reference (substring or RegExp). */
  image?: string | RegExp;
  /** Matched against command and args joined by spaces (substring or RegExp). */
  command?: string | RegExp;
  behaviour: Partial<Behaviour> | ((c: ContainerSpec, pod: KObject) => Partial<Behaviour>);
}

function test(m: string | RegExp | undefined, s: string): boolean {
  if (m === undefined) return true;
  return typeof m === 'string' ? s.includes(m) : m.test(s);
}

function shellScript(argv: string[]): string | undefined {
  if (
    (argv[0] === 'sh' || argv[0] === '/bin/sh' || argv[0] === 'bash' || argv[0] === '/bin/bash') &&
    argv[1] === '-c'
  ) {
    return argv.slice(2).join(' ');
  }
  return undefined;
}

/** Built-in rules, tried after the caller's rules. */
export const DEFAULT_RULES: PodRule[] = [
  { image: /kaniko/, behaviour: { builder: 'kaniko', runMs: null, logs: [] } },
  {
    command: /./,
    behaviour: (c, pod) => {
      const argv = [...(c.command ?? []), ...(c.args ?? [])];
      const script = shellScript(argv) ?? argv.join(' ');
      const logs: string[] = [];
      let exitCode = 0;
      let runMs: number | null | undefined;
      let finishes = true;
      for (const part of script.split(/\s*(?:&&|;|\n)\s*/)) {
        const words = part.trim().split(/\s+/);
        const cmd = words[0]?.replace(/^.*\//, '');
        if (cmd === 'echo')
          logs.push(
            words
              .slice(1)
              .join(' ')
              .replace(/^["']|["']$/g, ''),
          );
        else if (cmd === 'exit') {
          exitCode = Number(words[1] ?? 0) || 0;
          break;
        } else if (cmd === 'false') {
          exitCode = 1;
          break;
        } else if (cmd === 'sleep') {
          const secs = words[1] === 'infinity' ? Infinity : Number(words[1] ?? 0);
          runMs = secs === Infinity || runMs === null ? null : (runMs ?? 0) + secs * 1000;
        } else if (cmd !== 'true' && cmd !== '' && cmd !== undefined) finishes = false;
      }
      const out: Partial<Behaviour> = { exitCode };
      if (logs.length) out.logs = logs;
      if (runMs !== undefined) out.runMs = runMs;
      else if (!finishes && (pod.spec?.restartPolicy ?? 'Always') === 'Always') out.runMs = null;
      else out.runMs = DEFAULT_RUN;
      return out;
    },
  },
];

function annotation(pod: KObject, key: string, container: string): string | undefined {
  const a = pod.metadata.annotations ?? {};
  return a[`${ANNOTATION_PREFIX}${key}.${container}`] ?? a[`${ANNOTATION_PREFIX}${key}`];
}

export function resolveBehaviour(
  pod: KObject,
  c: ContainerSpec,
  rules: PodRule[],
  defaults: { runMs: number },
): Behaviour {
  const restartPolicy: string = pod.spec?.restartPolicy ?? 'Always';
  const argv = [...(c.command ?? []), ...(c.args ?? [])].join(' ');
  const b: Behaviour = {
    // Servers run until deleted; run-to-completion pods finish after a short while.
    runMs: restartPolicy === 'Always' ? null : defaults.runMs,
    exitCode: 0,
    logs: [`kube-sim: container ${c.name} started (image ${c.image})`],
    logIntervalMs: 0,
    ready: true,
  };
  for (const rule of [...rules, ...DEFAULT_RULES]) {
    if (!test(rule.image, c.image) || !test(rule.command, argv)) continue;
    const got = { ...(typeof rule.behaviour === 'function' ? rule.behaviour(c, pod) : rule.behaviour) };
    if (got.runMs === DEFAULT_RUN) got.runMs = defaults.runMs;
    Object.assign(b, got);
    break;
  }
  const exit = annotation(pod, 'exit-code', c.name);
  if (exit !== undefined) {
    b.exitCode = Number(exit) || 0;
    if (b.runMs === null) b.runMs = defaults.runMs;
  }
  const run = annotation(pod, 'run-ms', c.name);
  if (run !== undefined) b.runMs = run === 'forever' || run === '-1' ? null : Number(run);
  const logs = annotation(pod, 'logs', c.name);
  if (logs !== undefined) b.logs = logs === '' ? [] : logs.replace(/\n$/, '').split('\n');
  const interval = annotation(pod, 'log-interval-ms', c.name);
  if (interval !== undefined) b.logIntervalMs = Number(interval) || 0;
  const start = annotation(pod, 'start-ms', c.name);
  if (start !== undefined) b.startMs = Number(start) || 0;
  const ready = annotation(pod, 'ready', c.name);
  if (ready !== undefined) b.ready = ready !== 'false';
  const pull = annotation(pod, 'image-pull', c.name);
  if (pull === 'fail') b.imagePullError = 'ErrImagePull';
  return b;
}
