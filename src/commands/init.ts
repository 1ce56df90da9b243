/**
 * `tend init`: looks at a directory (Dockerfiles, Kubernetes manifests, kustomizations,
 * package.json start scripts), writes a tend.yml and action files that `tend validate` accepts,
 * and says what it found and why it chose each action. It never overwrites: a tend.yml or action
 * file already there, a tend project around the directory, or a Garden project in it (which tend
 * is to read as it is) stops it before anything is written.
 */
import { existsSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { detect } from '../config/init/detect.js';
import { planInit } from '../config/init/plan.js';
import { defaultRegistry, devNamespace, initEnvironment, renderFiles } from '../config/init/render.js';
import { ExitCode, TendError } from '../errors.js';

export interface InitData {
  root: string;
  project: string;
  dryRun: boolean;
  environment: { name: string; namespace: string; cleanup: { afterInactivity: string; action: string } };
  providers: string[];
  actions: {
    ref: string;
    type: string;
    file: string;
    dependencies: string[];
    because: string;
    notes: string[];
  }[];
  /** Garden configuration files found (nothing is written beside a Garden project). */
  garden: string[];
  leftOut: { path: string; because: string }[];
  files: { path: string; actions: string[]; written: boolean; content: string }[];
}

/** The nearest tend.yml in a directory above `dir`, if any. */
function enclosingProject(dir: string): string | undefined {
  for (let at = path.dirname(dir); ; at = path.dirname(at)) {
    const file = path.join(at, 'tend.yml');
    if (existsSync(file)) return file;
    if (path.dirname(at) === at) return undefined;
  }
}

function directoryToInit(options: GlobalOptions): string {
  const root = path.resolve(options.root ?? process.cwd());
  let isDirectory = false;
  try {
    isDirectory = statSync(root).isDirectory();
  } catch {
    // reported below
  }
  if (!isDirectory) {
    throw new TendError('TEND_USAGE', `--root ${options.root}: no such directory`);
  }
  return root;
}

/** Creates each file only if it does not exist ('wx'); on a failure, removes those this run created. */
function writeNewFiles(root: string, files: { path: string; content: string }[]): void {
  const created: string[] = [];
  try {
    for (const file of files) {
      const full = path.join(root, file.path);
      writeFileSync(full, file.content, { flag: 'wx' });
      created.push(full);
    }
  } catch (error) {
    for (const full of created) unlinkSync(full);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new TendError(
        'TEND_INIT_EXISTS',
        `${(error as { path?: string }).path} appeared meanwhile: nothing written`,
      );
    }
    throw error;
  }
}

export function initCommand(options: GlobalOptions & { dryRun?: boolean }): CommandResult<InitData> {
  const root = directoryToInit(options);
  const dryRun = options.dryRun === true;
  const outer = enclosingProject(root);
  if (outer !== undefined) {
    throw new TendError(
      'TEND_INIT_EXISTS',
      `${outer}: ${root} is inside that tend project; run tend init at the top of a project that has no tend.yml`,
    );
  }
  const detection = detect(root);
  if (detection.tendFiles.length > 0) {
    throw new TendError(
      'TEND_INIT_EXISTS',
      `${detection.tendFiles.join(', ')}: tend configuration exists already in ${root}; tend init writes a new project only (move ${detection.tendFiles.length === 1 ? 'it' : 'them'} away to start again)`,
      { detail: { files: detection.tendFiles } },
    );
  }
  if (detection.garden.length > 0 && !dryRun) {
    throw new TendError(
      'TEND_INIT_GARDEN',
      `${detection.garden.join(', ')}: a Garden project. tend is to read Garden projects as they are ` +
        '(tend validate, then tend deploy, in its directory: docs/garden.md), so tend init writes no second configuration beside it: nothing written',
      {
        detail: {
          garden: detection.garden,
          hint: 'tend init --dry-run shows what it would write from the Dockerfiles and manifests alone',
        },
      },
    );
  }
  const plan = planInit(detection, path.basename(root));
  const rendered = renderFiles(plan);
  if (!dryRun) writeNewFiles(root, rendered);

  const fileOf = new Map(plan.files.flatMap((f) => f.actions.map((a) => [a, f.path] as const)));
  const data: InitData = {
    root,
    project: plan.project,
    dryRun,
    environment: {
      name: initEnvironment.name,
      namespace: devNamespace(plan.project),
      cleanup: { ...initEnvironment.cleanup },
    },
    providers: plan.providers,
    actions: plan.actions.map((a) => ({
      ref: `${a.kind.toLowerCase()}.${a.name}`,
      type: a.type,
      file: fileOf.get(a)!,
      dependencies: a.dependencies,
      because: a.because,
      notes: a.notes,
    })),
    garden: detection.garden,
    leftOut: plan.leftOut,
    files: rendered.map((f, i) => ({
      path: f.path,
      actions: plan.files[i]!.actions.map((a) => `${a.kind.toLowerCase()}.${a.name}`),
      written: !dryRun,
      content: f.content,
    })),
  };
  return { data, human: humanReport(data), exitCode: ExitCode.ok };
}

function humanReport(data: InitData): string {
  const out: string[] = [`project ${data.project} in ${data.root}`, ''];
  if (data.actions.length === 0) {
    out.push(
      'Found nothing to build or deploy (no Dockerfile, Kubernetes manifest, kustomization or package.json',
      'start script): tend.yml holds the project and its dev environment; add actions (docs/configuration.md).',
    );
  } else {
    out.push('Actions:');
    for (const action of data.actions) {
      out.push(`  ${action.ref} (${action.type}) in ${action.file}`, `      ${action.because}`);
      for (const note of action.notes) out.push(`      note: ${note}`);
    }
  }
  if (data.leftOut.length > 0) {
    out.push('', 'Left out:');
    for (const item of data.leftOut) out.push(`  ${item.path}: ${item.because}`);
  }
  if (data.garden.length > 0) {
    out.push(
      '',
      `Garden project: ${data.garden.join(', ')}. tend reads Garden projects as they are (docs/garden.md);`,
      'tend init writes nothing beside one. This is what it would write from the other files:',
    );
  }
  const cleanup = data.environment.cleanup;
  const describe = (file: InitData['files'][number]) =>
    file.path === 'tend.yml'
      ? [
          `project ${data.project}, environment ${data.environment.name} (namespace ${data.environment.namespace}, ` +
            `${cleanup.action} after ${cleanup.afterInactivity} without activity), providers ${data.providers.join(', ')}` +
            (file.actions.length > 0 ? `; ${file.actions.join(', ')}` : ''),
        ]
      : [file.actions.join(', ')];
  out.push(
    '',
    data.dryRun ? 'Would write (--dry-run: nothing written):' : 'Wrote:',
    formatTable(
      ['FILE', 'HOLDS'],
      data.files.map((f) => [f.path, ...describe(f)]),
    )
      .split('\n')
      .slice(1)
      .map((line) => `  ${line}`)
      .join('\n'),
  );
  if (!data.dryRun) {
    const builds = data.actions.some((a) => a.type === 'container');
    out.push(
      '',
      'Next:',
      '  tend validate                 check the configuration (it names every action)',
      builds
        ? `  tend deploy --var registry=<registry your cluster pulls from>   (default ${defaultRegistry})`
        : '  tend deploy',
      '  add .tend/ to .gitignore: tend keeps its local state there',
    );
  }
  return out.join('\n');
}
