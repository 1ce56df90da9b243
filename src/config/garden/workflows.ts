/**
 * Garden's Workflows and custom Commands (`kind: Workflow`, `kind: Command`) as tend runs them
 * (docs/garden.md#workflows-and-custom-commands): their documents checked, with file:line, and
 * read into steps. A step runs one of Garden's commands (`command:`, a Command's
 * `gardenCommand:`) as the tend command that does the same, a script (`sh -c`) or a program
 * (`exec:`). Templates stay as written here: they are resolved step by step when the steps run.
 */
import type { SourceLocation } from '../../errors.js';
import {
  inRenderedConfig,
  type ConfigPath,
  type ConfigProblem,
  type LocateTarget,
  type RenderedFrom,
} from '../project.js';
import { startsGardenCommand, tendCommandLine } from './step-commands.js';
import { isRecord, listWords, type GardenRecord } from './translation.js';

/** A Workflow or Command document as the loader found it. */
export interface GardenRunnable {
  kind: 'Workflow' | 'Command';
  value: GardenRecord;
  /** The file, relative to the project root. */
  file: string;
  locate(path: ConfigPath, target?: LocateTarget): SourceLocation;
  /** A Workflow a ConfigTemplate rendered: its templates read `inputs`, `parent` and `template` too. */
  rendered?: RenderedFrom;
}

export const stepConditions = ['onSuccess', 'onError', 'always', 'never'] as const;
export type StepCondition = (typeof stepConditions)[number];

export interface StepSpec {
  /** Its `name`, or `step-<n>` (from 1) as Garden names it. */
  name: string;
  description?: string;
  /** The key of what it runs: `command` (a Workflow's), `gardenCommand` (a Command's), `script`, `exec`. */
  key: 'command' | 'gardenCommand' | 'script' | 'exec';
  /** One of: Garden command words (a list, maybe templated), a script, a program to run. */
  command?: unknown;
  script?: unknown;
  exec?: unknown;
  envVars?: unknown;
  /** As written (templates are resolved before the steps run). */
  when: unknown;
  skip: unknown;
  continueOnError: unknown;
  /** Where the step is in its document. */
  path: ConfigPath;
}

export interface WorkflowSpec {
  name: string;
  description?: string;
  envVars?: unknown;
  files?: unknown;
  steps: StepSpec[];
  source: GardenRunnable;
  /** Why tend does not run it (a step runs a Garden command tend does not have): listed, not run. */
  notRun?: ConfigProblem;
}

export interface CommandParameter {
  name: string;
  description: string;
  type: 'string' | 'integer' | 'boolean';
  required: boolean;
}

export interface CustomCommandSpec {
  name: string;
  short: string;
  long?: string;
  args: CommandParameter[];
  opts: CommandParameter[];
  variables?: unknown;
  /** Its `steps`, or Garden's older `exec` then `gardenCommand` as two steps. */
  steps: StepSpec[];
  /** Offered as `tend <name>` too (false: the name is one of tend's commands). */
  topLevel: boolean;
  source: GardenRunnable;
  /** As a Workflow's. */
  notRun?: ConfigProblem;
}

export interface GardenRunnables {
  workflows: WorkflowSpec[];
  commands: CustomCommandSpec[];
  problems: ConfigProblem[];
  notes: { message: string; location: SourceLocation }[];
}

/**
 * Garden's top-level commands and their aliases (getBuiltinCommands' one-word paths): a custom
 * Command of one of these names is ignored by Garden.
 */
const gardenCommandNames: readonly string[] = [
  ...['build', 'cloud', 'enterprise', 'community', 'config', 'create', 'cleanup', 'del', 'delete'],
  ...['deploy', 'dev', 'diff', 'exec', 'get', 'link', 'login', 'logout', 'logs', 'options', 'plan'],
  ...['plugins', 'plugin', 'publish', 'run', 'workflow', 'self-update', 'serve', 'set', 'sync'],
  ...['test', 'tools', 'unlink', 'up', 'update-remote', 'util', 'validate', 'scan', 'version', 'v', 'V'],
];

/** Reads every Workflow and Command: problems and notes with their file:line. */
export function readRunnables(
  runnables: readonly GardenRunnable[],
  builtinCommands: readonly string[],
): GardenRunnables {
  const out: GardenRunnables = { workflows: [], commands: [], problems: [], notes: [] };
  const commandDocs: GardenRunnable[] = [];
  for (const runnable of runnables.filter((r) => r.kind === 'Command')) {
    const { name } = runnable.value;
    // As Garden: custom commands come from the files at the project root only.
    if (runnable.file.includes('/')) {
      out.notes.push({
        message: `Command ${String(name)}: custom commands are read from the files at the project root only (as Garden reads them); not offered`,
        location: runnable.locate([], 'key'),
      });
    } else if (typeof name === 'string' && gardenCommandNames.includes(name)) {
      // Garden skips it before checking it (getCustomCommands): a project may keep one that is not valid.
      out.notes.push({
        message: `Command ${name}: the name of one of Garden's own commands (Garden ignores the Command); not offered`,
        location: runnable.locate(['name'], 'key'),
      });
    } else commandDocs.push(runnable);
  }
  const customNames = commandDocs.map((r) => r.value.name).filter((n) => typeof n === 'string');
  const reader = new RunnableReader(out, customNames);
  for (const command of commandDocs) {
    const read = reader.command(command, builtinCommands);
    if (read) out.commands.push(read);
  }
  for (const workflow of runnables.filter((r) => r.kind === 'Workflow')) {
    const read = reader.workflow(workflow);
    if (read) out.workflows.push(read);
  }
  for (const list of [out.workflows, out.commands] as { name: string; source: GardenRunnable }[][]) {
    const seen = new Map<string, GardenRunnable>();
    for (const item of list) {
      const first = seen.get(item.name);
      if (!first) {
        seen.set(item.name, item.source);
        continue;
      }
      const at = first.locate([]);
      reader.invalid(
        item.source,
        ['name'],
        `a second ${item.source.kind} named ${item.name}; the first is at ${at.file}:${at.line}`,
      );
    }
  }
  return out;
}

const identifier = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** `Workflow ci`, `Command hello`, for messages. */
function label(source: GardenRunnable): string {
  return `${source.kind} ${typeof source.value.name === 'string' ? source.value.name : '(no name)'}`;
}
const workflowKeysIgnored = ['limits', 'resources', 'keepAliveHours', 'triggers'];

class RunnableReader {
  /** The first reason each Workflow or Command is not run. */
  private readonly notRunnable = new Map<GardenRunnable, ConfigProblem>();

  constructor(
    private readonly out: GardenRunnables,
    private readonly customNames: readonly string[],
  ) {}

  invalid(source: GardenRunnable, path: ConfigPath, message: string): void {
    this.out.problems.push({
      code: 'TEND_CONFIG_INVALID',
      // A rendered one's lines are the template's, shared by each rendering: which one it is is said.
      message: inRenderedConfig(`${label(source)}: ${message}`, source.rendered),
      location: source.locate(path, 'key'),
    });
  }

  note(source: GardenRunnable, path: ConfigPath, message: string): void {
    this.out.notes.push({ message, location: source.locate(path, 'key') });
  }

  /**
   * What tend cannot run in a Workflow or Command that is otherwise well formed: it is listed and
   * not run (a note, and the error of a run), never a validate error.
   */
  private notRun(source: GardenRunnable, path: ConfigPath, message: string): void {
    if (this.notRunnable.has(source)) return;
    const location = source.locate(path, 'key');
    const problem = {
      code: 'TEND_CONFIG_UNSUPPORTED' as const,
      message: inRenderedConfig(`${label(source)}: ${message}`, source.rendered),
      location,
    };
    this.notRunnable.set(source, problem);
    this.out.notes.push({ message: `${label(source)} is listed, not run: ${message}`, location });
  }

  /** `notRun` of a runnable, when it has one. */
  private notRunOf(source: GardenRunnable): { notRun?: ConfigProblem } {
    const problem = this.notRunnable.get(source);
    return problem ? { notRun: problem } : {};
  }

  /** The name, when it is one Garden takes (a literal: Garden does not template names). */
  name(source: GardenRunnable): string | undefined {
    const { name } = source.value;
    if (typeof name === 'string' && identifier.test(name)) return name;
    this.invalid(
      source,
      name === undefined ? [] : ['name'],
      name === undefined
        ? 'missing required key "name"'
        : `name must be lower-case letters, digits and dashes, starting with a letter or digit (got ${JSON.stringify(name)})`,
    );
    return undefined;
  }

  workflow(source: GardenRunnable): WorkflowSpec | undefined {
    const name = this.name(source);
    const { value } = source;
    const ignored = workflowKeysIgnored.filter((key) => value[key] !== undefined);
    if (ignored.length > 0) {
      this.note(
        source,
        [ignored[0]!],
        `Workflow ${String(value.name)}: ${listWords(ignored)} ${ignored.length > 1 ? 'are' : 'is'} for Garden Cloud; accepted and ignored`,
      );
    }
    this.files(source);
    if (value.envVars !== undefined && !isRecord(value.envVars)) {
      this.invalid(source, ['envVars'], 'envVars must be a mapping of variable names to values');
    }
    const steps = this.steps(source, ['command', 'script']);
    if (name === undefined || steps === undefined) return undefined;
    return {
      name,
      ...(typeof value.description === 'string' ? { description: value.description } : {}),
      ...(value.envVars !== undefined ? { envVars: value.envVars } : {}),
      ...(value.files !== undefined ? { files: value.files } : {}),
      steps,
      source,
      ...this.notRunOf(source),
    };
  }

  command(source: GardenRunnable, builtinCommands: readonly string[]): CustomCommandSpec | undefined {
    const name = this.name(source);
    const { value } = source;
    const description = value.description;
    let short: string | undefined;
    let long: string | undefined;
    if (typeof description === 'string') short = description;
    else if (isRecord(description) && typeof description.short === 'string') {
      short = description.short;
      if (typeof description.long === 'string') long = description.long;
    } else {
      this.invalid(source, description === undefined ? [] : ['description'], 'needs description.short');
    }
    const args = this.parameters(source, 'args');
    const opts = this.parameters(source, 'opts');
    let steps: StepSpec[] | undefined;
    if (value.steps !== undefined) {
      for (const key of ['exec', 'gardenCommand'] as const) {
        if (value[key] !== undefined) this.invalid(source, [key], `${key} and steps: give one of them`);
      }
      steps = this.steps(source, ['gardenCommand', 'exec', 'script']);
    } else if (value.exec === undefined && value.gardenCommand === undefined) {
      this.invalid(source, [], 'needs steps, exec or gardenCommand');
    } else {
      steps = this.legacySteps(source);
    }
    if (value.variables !== undefined && !isRecord(value.variables)) {
      this.invalid(source, ['variables'], 'variables must be a mapping');
    }
    if (name === undefined || short === undefined || steps === undefined || !args || !opts) return undefined;
    const topLevel = !builtinCommands.includes(name);
    if (!topLevel) {
      this.note(
        source,
        ['name'],
        `Command ${name} has the name of a tend command: it runs as \`tend command ${name}\` only`,
      );
    }
    return {
      name,
      short,
      ...(long !== undefined ? { long } : {}),
      args,
      opts,
      ...(value.variables !== undefined ? { variables: value.variables } : {}),
      steps,
      topLevel,
      source,
      ...this.notRunOf(source),
    };
  }

  /** Garden's older form: `exec` runs, then `gardenCommand` (when exec succeeded). */
  private legacySteps(source: GardenRunnable): StepSpec[] | undefined {
    const steps: StepSpec[] = [];
    const base = { when: undefined, skip: undefined, continueOnError: undefined };
    if (source.value.exec !== undefined) {
      if (!this.exec(source, ['exec'], source.value.exec)) return undefined;
      steps.push({ ...base, name: 'exec', key: 'exec', exec: source.value.exec, path: [] });
    }
    if (source.value.gardenCommand !== undefined) {
      if (!this.commandWords(source, ['gardenCommand'], source.value.gardenCommand)) return undefined;
      const command = source.value.gardenCommand;
      steps.push({ ...base, name: 'gardenCommand', key: 'gardenCommand', command, path: [] });
    }
    return steps;
  }

  private parameters(source: GardenRunnable, key: 'args' | 'opts'): CommandParameter[] | undefined {
    const list = source.value[key];
    if (list === undefined) return [];
    if (!Array.isArray(list)) {
      this.invalid(source, [key], `${key} must be a list of {name, description, type, required}`);
      return undefined;
    }
    const out: CommandParameter[] = [];
    let ok = true;
    list.forEach((item: unknown, i) => {
      const at = [key, i];
      if (!isRecord(item) || typeof item.name !== 'string' || !/^[a-z][a-z0-9-]*$/.test(item.name)) {
        this.invalid(source, at, `${key}[${i}] needs a name of lower-case letters, digits and dashes`);
        ok = false;
        return;
      }
      const type = item.type ?? 'string';
      const types = key === 'args' ? ['string', 'integer'] : ['string', 'integer', 'boolean'];
      if (typeof type !== 'string' || !types.includes(type)) {
        this.invalid(source, [...at, 'type'], `type must be one of ${types.join(', ')}`);
        ok = false;
        return;
      }
      if (out.some((p) => p.name === item.name)) {
        this.invalid(
          source,
          [...at, 'name'],
          `a second ${key === 'args' ? 'argument' : 'option'} ${item.name}`,
        );
        ok = false;
        return;
      }
      out.push({
        name: item.name,
        description: typeof item.description === 'string' ? item.description : '',
        type: type as CommandParameter['type'],
        required: item.required === true,
      });
    });
    return ok ? out : undefined;
  }

  private files(source: GardenRunnable): void {
    const files = source.value.files;
    if (files === undefined) return;
    if (!Array.isArray(files)) {
      this.invalid(source, ['files'], 'files must be a list of {path, data}');
      return;
    }
    files.forEach((file: unknown, i) => {
      if (!isRecord(file) || typeof file.path !== 'string') {
        this.invalid(source, ['files', i], 'a file needs a path (relative to the project root) and data');
        return;
      }
      if (!file.path.includes('${') && escapesRoot(file.path)) {
        this.invalid(source, ['files', i, 'path'], `${file.path} is not inside the project root`);
      }
      if ((file.data === undefined) === (file.secretName === undefined)) {
        this.invalid(source, ['files', i], 'a file needs one of data and secretName');
      }
    });
  }

  /** The steps, each with exactly one of `kinds`; undefined when any is not valid. */
  private steps(source: GardenRunnable, kinds: readonly string[]): StepSpec[] | undefined {
    const list = source.value.steps;
    if (!Array.isArray(list) || list.length === 0) {
      this.invalid(source, list === undefined ? [] : ['steps'], 'needs steps: a list of at least one step');
      return undefined;
    }
    const steps: StepSpec[] = [];
    const names = new Set<string>();
    let ok = true;
    list.forEach((step: unknown, i) => {
      const path = ['steps', i];
      const read = this.step(source, path, step, kinds, i);
      if (!read) {
        ok = false;
        return;
      }
      if (names.has(read.name)) {
        this.invalid(source, [...path, 'name'], `a second step named ${read.name}`);
        ok = false;
      }
      names.add(read.name);
      steps.push(read);
    });
    return ok ? steps : undefined;
  }

  private step(
    source: GardenRunnable,
    path: ConfigPath,
    step: unknown,
    kinds: readonly string[],
    index: number,
  ): StepSpec | undefined {
    if (!isRecord(step)) {
      this.invalid(source, path, `a step must be a mapping with one of ${listWords(kinds)}`);
      return undefined;
    }
    const given = kinds.filter((key) => step[key] !== undefined);
    if (given.length !== 1) {
      this.invalid(
        source,
        given.length > 1 ? [...path, given[1]!] : path,
        given.length > 1
          ? `a step has ${listWords(given)}: give exactly one of ${listWords(kinds)}`
          : `a step needs one of ${listWords(kinds)}`,
      );
      return undefined;
    }
    const [kind] = given as [StepSpec['key']];
    const body = step[kind];
    if (kind === 'script' && typeof body !== 'string') {
      this.invalid(source, [...path, kind], 'script must be a string (run with sh -c)');
      return undefined;
    }
    if (kind === 'exec' && !this.exec(source, [...path, kind], body)) return undefined;
    if (
      (kind === 'command' || kind === 'gardenCommand') &&
      !this.commandWords(source, [...path, kind], body)
    ) {
      return undefined;
    }
    if (typeof step.when === 'string' && !step.when.includes('${') && !isCondition(step.when)) {
      this.invalid(source, [...path, 'when'], `when must be one of ${stepConditions.join(', ')}`);
      return undefined;
    }
    if (step.name !== undefined && (typeof step.name !== 'string' || !identifier.test(step.name))) {
      this.invalid(source, [...path, 'name'], 'a step name must be lower-case letters, digits and dashes');
      return undefined;
    }
    if (step.envVars !== undefined && !isRecord(step.envVars)) {
      this.invalid(source, [...path, 'envVars'], 'envVars must be a mapping of variable names to values');
      return undefined;
    }
    return {
      name: typeof step.name === 'string' ? step.name : `step-${index + 1}`,
      ...(typeof step.description === 'string' ? { description: step.description } : {}),
      key: kind,
      ...(kind === 'command' || kind === 'gardenCommand' ? { command: body } : { [kind]: body }),
      ...(step.envVars !== undefined ? { envVars: step.envVars } : {}),
      when: step.when,
      skip: step.skip,
      continueOnError: step.continueOnError,
      path,
    };
  }

  private exec(source: GardenRunnable, path: ConfigPath, exec: unknown): boolean {
    if (!isRecord(exec) || !Array.isArray(exec.command) || exec.command.length === 0) {
      this.invalid(
        source,
        path,
        'exec needs command: a list, the program and its arguments (e.g. [sh, -c, "…"])',
      );
      return false;
    }
    if (exec.env !== undefined && !isRecord(exec.env)) {
      this.invalid(source, [...path, 'env'], 'exec.env must be a mapping of variable names to values');
      return false;
    }
    return true;
  }

  /** A Garden command as a list of words; when its first words are written out, one tend runs. */
  private commandWords(source: GardenRunnable, path: ConfigPath, words: unknown): boolean {
    if (!Array.isArray(words)) {
      this.invalid(
        source,
        path,
        `${String(path.at(-1))} must be a list of words, e.g. [deploy] or [run, my-task] (got ${typeof words === 'string' ? `the string "${words}"` : typeof words})`,
      );
      return false;
    }
    if (words.length === 0) {
      this.invalid(source, path, `${String(path.at(-1))} is empty: name a Garden command, e.g. [deploy]`);
      return false;
    }
    const literal: string[] = [];
    for (const word of words) {
      if (typeof word !== 'string' || word.includes('${')) break;
      literal.push(word);
    }
    if (literal.length === 0) return true; // checked when the step runs
    const line = tendCommandLine(literal, this.customNames);
    // `[get, ${var.what}]`: the templated words may complete it, checked when the step runs.
    const templated = literal.length < words.length;
    if ('problem' in line && !(templated && startsGardenCommand(literal[0]!))) {
      this.notRun(source, [...path, 0], line.problem);
    }
    return true;
  }
}

export function isCondition(value: unknown): value is StepCondition {
  return (stepConditions as readonly unknown[]).includes(value);
}

/** Whether a relative path leaves the directory it is relative to (or is absolute). */
export function escapesRoot(file: string): boolean {
  if (file.startsWith('/') || file === '') return true;
  let depth = 0;
  for (const part of file.split('/')) {
    if (part === '..') depth--;
    else if (part !== '.' && part !== '') depth++;
    if (depth < 0) return true;
  }
  return false;
}
