/**
 * A 0.12 module's references to other modules, as the actions they became: `modules.<name>.outputs`
 * and `.version` are its Build's (a container module's image names are its Build's outputs),
 * `runtime.services.<name>` a Deploy's and `runtime.tasks.<name>` a Run's. An action that reads
 * them depends on that action, as a Garden module depends on the modules it reads.
 *
 * Some modules become no Build, and Garden gives their outputs before anything runs: a container
 * module without a Dockerfile deploys its `image` as it is, its image names its outputs
 * (core/src/plugins/container/container.ts, getContainerModuleOutputs); a helm module deploys its
 * chart, its `release-name` its output (core/src/plugins/kubernetes/helm/handlers.ts). Those are
 * written in as text here; what Garden computes from the module's version (`deployment-image-tag`,
 * `version`) tend does not have, and says so at the reference's line.
 */
import { buildlessModuleOutput, imageOnlyModuleOutputs, type BuildlessModule } from '../action-references.js';
import type { ConfigPath } from '../project.js';
import { isImageOnlyModule } from './module-parts.js';
import type { IndexedModule } from './project-index.js';
import { isRecord, type Translation } from './translation.js';

/** What a module that becomes no Build gives as outputs, or why tend has none; undefined for any other module. */
export function buildlessModuleOf(module: IndexedModule | undefined): BuildlessModule | undefined {
  if (!module) return undefined;
  const { value } = module;
  if (value.type === 'helm') {
    const helm = { why: 'a helm module deploys its chart', key: 'releaseName', names: 'release' };
    return buildless(helm, value.releaseName ?? value.name, (release) => ({
      outputs: { 'release-name': release },
      gives: 'its release name',
    }));
  }
  // A container module naming no image without a Dockerfile (its files perhaps in another repository,
  // `repositoryUrl`) is refused at its own line and not loaded: read as its Build, which is not
  // there, what reads it is no further error.
  if (!isImageOnlyModule(module) || value.image === undefined) return undefined;
  const imageOnly = {
    why: 'a container module without a Dockerfile deploys its image as it is',
    key: 'image',
    names: 'image',
  };
  return buildless(imageOnly, value.image, (image) => ({
    outputs: imageOnlyModuleOutputs(image),
    gives: 'its image names',
    besides: ", where Garden computes the rest from the module's version",
  }));
}

/**
 * A buildless module whose outputs come from its `key` (`value`, a `names`): they, or why tend has
 * none — no text there, or a template, which tend does not resolve for another module.
 */
function buildless(
  { why, key, names }: { why: string; key: string; names: string },
  value: unknown,
  outputs: (text: string) => Omit<Extract<BuildlessModule, { outputs: unknown }>, 'why'>,
): BuildlessModule {
  if (typeof value !== 'string') return { why, none: `it names no ${names}` };
  if (value.includes('${'))
    return { why, none: `its ${key} is a template, which tend does not resolve for another module` };
  return { why, ...outputs(value) };
}

/** A reference to another module, service or task: its root, its name and the keys after it. */
const moduleReference =
  /(?<![\w.-])(modules|runtime\.services|runtime\.tasks)\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)/g;

/** The action kind each root reads, and the first keys after the name that read it. */
const readsOf: Readonly<Record<string, { kind: string; fields: readonly string[] }>> = {
  modules: { kind: 'build', fields: ['outputs', 'version'] },
  'runtime.services': { kind: 'deploy', fields: ['outputs'] },
  'runtime.tasks': { kind: 'run', fields: ['outputs'] },
};

/** Whether `offset` in `text` is inside a `${…}` expression (not in the text around it, nor after `$${`). */
function inExpression(text: string, offset: number): boolean {
  const open = text.lastIndexOf('${', offset);
  return open !== -1 && text[open - 1] !== '$' && !text.slice(open, offset).includes('}');
}

/**
 * `value` (a module, or any part of it at `at`) with its references to other modules read as
 * the actions they became, and an image-only module's image names written in.
 */
export function withActionReferences(
  value: unknown,
  modules: ReadonlyMap<string, IndexedModule>,
  translation: Translation,
  at: ConfigPath = [],
): unknown {
  if (typeof value === 'string') {
    if (!value.includes('${')) return value;
    return value.replace(
      moduleReference,
      (whole, root: string, name: string, keys: string, offset: number) => {
        if (!inExpression(value, offset)) return whole;
        const written =
          root === 'modules' ? buildlessReference(whole, name, keys, modules, translation, at) : undefined;
        if (written !== undefined) return written;
        const { kind, fields } = readsOf[root]!;
        return fields.includes(keys.split('.')[1]!) ? `actions.${kind}.${name}${keys}` : whole;
      },
    );
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => withActionReferences(item, modules, translation, [...at, index]));
  }
  if (isRecord(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        withActionReferences(item, modules, translation, [...at, key]),
      ]),
    );
  }
  return value;
}

/**
 * A reference to module `name` (`keys` what follows its name, `.outputs.release-name`), as
 * written in an expression: a buildless module's output as a string literal; another of its
 * references an error at `at` (and `null`); undefined for any other module.
 */
function buildlessReference(
  whole: string,
  name: string,
  keys: string,
  modules: ReadonlyMap<string, IndexedModule>,
  translation: Translation,
  at: ConfigPath,
): string | undefined {
  const module = buildlessModuleOf(modules.get(name));
  if (module === undefined) return undefined;
  const read = buildlessModuleOutput(module, [name, ...keys.split('.').slice(1)]);
  if ('value' in read) return JSON.stringify(read.value);
  translation.unsupported(at, `"${whole}": ${read.problem}`);
  return 'null'; // the load fails with the error above: no second one for a Build that is not there
}
