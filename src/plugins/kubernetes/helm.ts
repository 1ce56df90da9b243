/**
 * A `helm` Deploy (and the chart of a `helm-pod` Test or Run): the chart rendered by
 * `helm template <release> <chart> --namespace <app namespace> --values …` and applied like any
 * manifest (deploy.ts), so every object and namespace is recorded as a kubernetes Deploy's are.
 * tend installs no release: `helm list` shows nothing, and the chart's hooks that run on install
 * or upgrade are applied with the rest; the others (tests, delete and rollback hooks) are left
 * out. Without `helm` on PATH a deploy is TEND_TOOL_NOT_FOUND; `tend validate` needs no helm.
 */
import type * as childProcesses from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseAllDocuments, stringify } from 'yaml';
import { builtinModule } from '../../builtin-module.js';
import { TendError } from '../../errors.js';
import type {
  ActionVersionInputs,
  PluginContext,
  ResolvedAction,
  VersionInputsParams,
} from '../../plugin/types.js';
import type { KubeObject } from './client/index.js';
import type { HelmDeploySpec } from './config.js';
import { onPath } from './kustomize.js';
import { helmRenderings } from './memo.js';
import { checkManifests, invalid, type Manifest } from './manifests.js';
import { clientFor } from './provider.js';

/** What rendering needs of a spec: a helm Deploy's or a helm-pod's. */
export type ChartSpec = Pick<HelmDeploySpec, 'chart' | 'values' | 'valueFiles' | 'releaseName'>;

const renderTimeoutMs = 300_000;
const maxOutputBytes = 256 * 1024 * 1024;
const childProcess = () => builtinModule<typeof childProcesses>('node:child_process');

/** The hooks that run when a release is installed or upgraded: applied with the rest. */
const installHooks = new Set(['pre-install', 'post-install', 'pre-upgrade', 'post-upgrade']);

function hasChartYaml(dir: string): boolean {
  return statSync(path.join(dir, 'Chart.yaml'), { throwIfNoEntry: false })?.isFile() === true;
}

/** The chart as helm names it on its command line, and the local chart directory (if it is one). */
function chartReference(action: ResolvedAction<ChartSpec>): { reference: string[]; localDir?: string } {
  const chart = action.spec.chart ?? {};
  if (chart.path !== undefined || (!chart.name && !chart.url)) {
    const dir = path.resolve(action.sourceDir, chart.path ?? '.');
    if (!hasChartYaml(dir)) {
      throw invalid(
        action,
        chart.path !== undefined
          ? `chart.path ${chart.path}: no Chart.yaml in ${dir}`
          : `no chart: set spec.chart.path, spec.chart.name (with repo) or spec.chart.url; there is no Chart.yaml in ${dir}`,
        { path: dir },
      );
    }
    return { reference: [dir], localDir: dir };
  }
  const reference = [chart.url ?? chart.name!];
  if (chart.version) reference.push('--version', chart.version);
  if (chart.repo && !chart.url) reference.push('--repo', chart.repo);
  return { reference };
}

/** A local chart that names dependencies has them fetched (`--dependency-update`), as Garden does. */
function hasDependencies(dir: string): boolean {
  if (statSync(path.join(dir, 'requirements.yaml'), { throwIfNoEntry: false })?.isFile()) return true;
  const chart = parseAllDocuments(readFileSync(path.join(dir, 'Chart.yaml'), 'utf8'))[0]?.toJS() as
    { dependencies?: unknown[] } | undefined;
  return Array.isArray(chart?.dependencies) && chart.dependencies.length > 0;
}

function notFound(action: ResolvedAction): TendError {
  return new TendError(
    'TEND_TOOL_NOT_FOUND',
    `${action.ref}: helm is not on PATH; tend renders the chart with \`helm template\`: install helm ` +
      `(https://helm.sh/docs/intro/install/) or put it on PATH`,
    { actionRef: action.ref, detail: { needed: ['helm'], path: process.env.PATH ?? '' } },
  );
}

/** The chart's manifests (YAML), rendered for the app namespace. */
export async function renderChart(
  ctx: PluginContext,
  action: ResolvedAction<ChartSpec>,
  namespace: string,
): Promise<string> {
  const program = onPath('helm');
  if (!program) throw notFound(action);
  const { reference, localDir } = chartReference(action);
  const valueFiles = (action.spec.valueFiles ?? []).map((file) => {
    const full = path.resolve(action.sourceDir, file);
    if (!statSync(full, { throwIfNoEntry: false })?.isFile()) {
      throw invalid(action, `valueFiles: ${file} not found (looked in ${action.sourceDir})`, { file: full });
    }
    return full;
  });
  const releaseName = action.spec.releaseName ?? action.name;
  const args = [
    'template',
    releaseName,
    ...reference,
    '--namespace',
    namespace,
    ...(localDir && hasDependencies(localDir) ? ['--dependency-update'] : []),
    ...valueFiles.flatMap((file) => ['--values', file]),
  ];
  const values = stringify(action.spec.values ?? {});
  const key = JSON.stringify([program, args, values]);
  return helmRenderings.get(key, () => runHelm(ctx, action, program, args, values));
}

/** Runs `helm template` with the spec's values in a file of their own (the last `--values`: they win). */
async function runHelm(
  ctx: PluginContext,
  action: ResolvedAction,
  program: string,
  args: string[],
  values: string,
): Promise<string> {
  const dir = path.join(ctx.tendDir, 'tmp');
  mkdirSync(dir, { recursive: true });
  const valuesFile = path.join(dir, `helm-values-${action.name}-${randomBytes(4).toString('hex')}.yaml`);
  writeFileSync(valuesFile, values);
  const all = [...args, '--values', valuesFile];
  try {
    return await new Promise<string>((resolve, reject) => {
      childProcess().execFile(
        program,
        all,
        {
          cwd: action.sourceDir,
          encoding: 'utf8',
          maxBuffer: maxOutputBytes,
          timeout: renderTimeoutMs,
          signal: ctx.signal,
        },
        (error, stdout, stderr) => {
          if (!error) return resolve(stdout);
          if (ctx.signal.aborted) return reject(ctx.signal.reason as Error);
          const failure = error as childProcesses.ExecFileException;
          const said = stderr.trim().replace(/^error:\s*/i, '') || failure.message;
          reject(
            invalid(action, `helm template ${args[1]} failed: ${said.slice(0, 4000)}`, {
              command: [program, ...all],
              ...(typeof failure.code === 'number' ? { exitCode: failure.code } : {}),
            }),
          );
        },
      );
    });
  } finally {
    rmSync(valuesFile, { force: true });
  }
}

/** The rendered objects, as helm would install them (hooks that do not run on install left out). */
export function chartManifests(action: ResolvedAction<ChartSpec>, text: string): Manifest[] {
  const releaseName = action.spec.releaseName ?? action.name;
  const out: Manifest[] = [];
  parseAllDocuments(text).forEach((doc, index) => {
    const origin = `helm template ${releaseName}#${index + 1}`;
    if (doc.errors.length > 0) {
      throw invalid(action, `${origin}: invalid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
    }
    const object = doc.toJS() as KubeObject | null;
    if (object === null || object === undefined) return;
    const hooks = object.metadata?.annotations?.['helm.sh/hook'];
    if (hooks !== undefined && !hooks.split(',').some((hook) => installHooks.has(hook.trim()))) return;
    out.push({ object, origin });
  });
  return checkManifests(action, out);
}

/** The chart's manifests for this action in the app namespace. */
export async function loadChartManifests(
  ctx: PluginContext,
  action: ResolvedAction<ChartSpec>,
): Promise<Manifest[]> {
  const client = await clientFor(ctx);
  return chartManifests(action, await renderChart(ctx, action, client.settings.appNamespace));
}

/**
 * What the version covers beyond the sources: the local chart's files and the value files (a
 * remote chart is named by its version, in the spec). No helm runs: validate needs none.
 */
export async function versionInputs(params: VersionInputsParams): Promise<ActionVersionInputs> {
  const spec = params.spec as ChartSpec;
  const files = (spec.valueFiles ?? []).map((file) => path.resolve(params.sourceDir, file));
  if (spec.chart?.name || spec.chart?.url) return { files };
  const chartDir = path.resolve(params.sourceDir, spec.chart?.path ?? '.');
  // A chart inside the source is in its files already; one outside (`../charts/api`) is listed.
  const outside = path.relative(params.sourceDir, chartDir).startsWith('..');
  const { globMatches } = await import('./manifest-globs.js');
  const chartFiles =
    outside && statSync(chartDir, { throwIfNoEntry: false })?.isDirectory()
      ? globMatches(chartDir, '**/*', []).map((file) => path.join(chartDir, file))
      : [];
  return { files: [...files, ...chartFiles] };
}
