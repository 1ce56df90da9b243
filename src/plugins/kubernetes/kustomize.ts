/**
 * A kubernetes Deploy's `kustomize:`: the kustomization rendered by the `kustomize` program when
 * it is on PATH (`kustomize build <path> [extraArgs]`: installed on purpose, usually newer than the
 * one built into kubectl), else by `kubectl kustomize <path> [extraArgs]`.
 */
import type * as childProcesses from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { builtinModule } from '../../builtin-module.js';
import { TendError } from '../../errors.js';
import type { KustomizeSpec } from './config.js';
import { keepRendering, keptRendering, renderingDocuments, renderingKey } from './kustomize-kept.js';
import { kustomizeRenderings } from './memo.js';
import { statePaths } from '../../state/files.js';

/** A rendering that takes longer is stopped: a remote base that cannot be fetched must not hang every command. */
const renderTimeoutMs = 300_000;
/** More output than this is no set of manifests tend should apply in one go. */
const maxOutputBytes = 256 * 1024 * 1024;
/** kustomize's own messages can run long (a whole YAML document quoted): the start says what is wrong. */
const maxMessageChars = 4000;

const childProcess = () => builtinModule<typeof childProcesses>('node:child_process');

/** An executable file named `name` in a directory of PATH. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The program and arguments that render a kustomization, as found on PATH now. */
export function kustomizeCommand(): { program: string; args: string[] } | undefined {
  const kustomize = onPath('kustomize');
  if (kustomize) return { program: kustomize, args: ['build'] };
  const kubectl = onPath('kubectl');
  if (kubectl) return { program: kubectl, args: ['kustomize'] };
  return undefined;
}

/**
 * What kustomize said, without the wrapping: kubectl logs it through klog
 * (`E1202 11:27:03.666842 20594 run.go:72] "command failed" err="…"`, the message quoted as Go
 * quotes strings), kustomize prints `Error: …`.
 */
export function kustomizeMessage(stderr: string): string {
  const text = stderr.trim();
  const klog = /^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] "command failed" err=("(?:[^"\\]|\\.)*")$/s.exec(text);
  if (klog) {
    try {
      return JSON.parse(klog[1]!) as string;
    } catch {
      // not JSON-compatible quoting after all: the message as it is
    }
  }
  return text.replace(/^error:\s*/i, '');
}

/** Why a rendering failed, for people: kustomize's message, else what stopped it. */
function whyFailed(failure: childProcesses.ExecFileException, stderr: string): string {
  if ((failure.code as unknown) === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') {
    return `printed more than ${maxOutputBytes / 1024 / 1024} MiB of manifests`;
  }
  if (failure.killed) return `did not finish in ${renderTimeoutMs / 1000} s`;
  const said = kustomizeMessage(stderr);
  if (!said) return `failed: ${failure.message}`;
  return `failed: ${said.length > maxMessageChars ? `${said.slice(0, maxMessageChars)}…` : said}`;
}

/**
 * The manifests the kustomization renders (YAML, `---` between objects). Its failure (a bad
 * kustomization.yaml, a missing resource) is `invalid` with kustomize's message; neither program
 * on PATH is TEND_TOOL_NOT_FOUND.
 */
export async function renderKustomization(
  sourceDir: string,
  kustomize: KustomizeSpec,
  options: {
    /** The error for a kustomization that does not render (TEND_K8S_MANIFEST_INVALID, naming the action). */
    invalid: (message: string, detail?: Record<string, unknown>) => TendError;
    /** The action, for messages. */
    actionRef?: string;
    signal?: AbortSignal;
    /** The project's root: its `.tend/cache/kustomize/` keeps renderings across commands (kustomize-kept.ts). */
    projectRoot?: string;
  },
): Promise<string> {
  const { invalid, actionRef } = options;
  const dir = path.resolve(sourceDir, kustomize.path);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    throw invalid(`kustomize.path ${kustomize.path} is not a directory (looked in ${sourceDir})`, {
      path: dir,
    });
  }
  const command = kustomizeCommand();
  if (!command) {
    throw new TendError(
      'TEND_TOOL_NOT_FOUND',
      `${actionRef ? `${actionRef}: ` : ''}kustomize: neither kustomize nor kubectl is on PATH; install kubectl ` +
        `(https://kubernetes.io/docs/tasks/tools/) or kustomize (https://kubectl.docs.kubernetes.io/installation/kustomize/)`,
      {
        ...(actionRef ? { actionRef } : {}),
        detail: { needed: ['kustomize', 'kubectl'], path: process.env.PATH ?? '' },
      },
    );
  }
  const key = JSON.stringify([command.program, dir, sourceDir, kustomize.extraArgs ?? []]);
  // The version, the status and the deploy of an action read one rendering (memo.ts).
  return kustomizeRenderings.get(key, () => renderOrReuse(command, dir, sourceDir, kustomize, options));
}

/** Where a project keeps its renderings and their documents (kustomize-kept.ts). */
const keptDir = (projectRoot: string) => path.join(statePaths(projectRoot).cache, 'kustomize');

/**
 * The documents of a rendering's text (or a manifest file's), each one's value, as `parse` gives
 * them: kept parsed by an earlier command in the project's `.tend/cache/kustomize/` (kustomize-kept.ts).
 */
export function renderedDocuments(text: string, projectRoot: string, parse: () => unknown[]): unknown[] {
  return renderingDocuments(keptDir(projectRoot), text, parse);
}

/** A rendering kept by an earlier command from the same inputs, else a new one (kept when its inputs held still). */
async function renderOrReuse(
  command: { program: string; args: string[] },
  dir: string,
  sourceDir: string,
  kustomize: KustomizeSpec,
  options: {
    invalid: (message: string, detail?: Record<string, unknown>) => TendError;
    signal?: AbortSignal;
    projectRoot?: string;
  },
): Promise<string> {
  if (options.projectRoot === undefined) return runKustomize(command, dir, sourceDir, kustomize, options);
  const cacheDir = keptDir(options.projectRoot);
  const inputsKey = () =>
    renderingKey(command.program, [...command.args, sourceDir], dir, kustomize.extraArgs ?? [], cacheDir);
  const before = inputsKey();
  const kept = before === undefined ? undefined : keptRendering(cacheDir, before);
  if (kept !== undefined) return kept;
  const text = await runKustomize(command, dir, sourceDir, kustomize, options);
  if (before !== undefined && inputsKey() === before) keepRendering(cacheDir, before, text);
  return text;
}

function runKustomize(
  command: { program: string; args: string[] },
  dir: string,
  sourceDir: string,
  kustomize: KustomizeSpec,
  options: {
    invalid: (message: string, detail?: Record<string, unknown>) => TendError;
    signal?: AbortSignal;
  },
): Promise<string> {
  const { invalid, signal } = options;
  const args = [...command.args, dir, ...(kustomize.extraArgs ?? [])];
  const shown = `${path.basename(command.program)} ${command.args.join(' ')} ${kustomize.path}`;
  return new Promise<string>((resolve, reject) => {
    childProcess().execFile(
      command.program,
      args,
      {
        cwd: sourceDir,
        encoding: 'utf8',
        maxBuffer: maxOutputBytes,
        timeout: renderTimeoutMs,
        ...(signal ? { signal } : {}),
      },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        if (signal?.aborted) return reject(signal.reason as Error);
        const failure = error as childProcesses.ExecFileException;
        reject(
          invalid(`${shown} ${whyFailed(failure, stderr)}`, {
            command: [command.program, ...args],
            ...(typeof failure.code === 'number' ? { exitCode: failure.code } : {}),
          }),
        );
      },
    );
  });
}
