/**
 * Outputs an exec command writes to files, as Garden (0.14.8 on) reads them
 * (core/src/plugins/exec/common.ts readExecOutputs): the command gets a directory of its own in
 * `GARDEN_ACTION_OUTPUTS_PATH`, and `GARDEN_ACTION_JSON_OUTPUTS_PATH` names `.outputs.json` in it.
 * Afterwards each top-level key of that JSON object with a string, number, boolean or null value
 * is an output, and so is each file in the directory, named by the file, its text less one
 * trailing newline. Keys Garden skips (not a name, `log`, `stdout`, `stderr`, a structured value, a
 * directory) are skipped with a warning, as in Garden; JSON that is not an object fails the
 * action. Beside `::output key=value` lines on stdout, which tend also reads.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TendError } from '../../errors.js';
import type { PluginLog } from '../../plugin/types.js';

const jsonFile = '.outputs.json';
const outputKey = /^[a-zA-Z][a-zA-Z0-9_-]*$/;
/** Garden's exec outputs of its own, which a file may not set. */
const reservedKeys = new Set(['log', 'stdout', 'stderr']);
/** More than an output is for: a file this large is an error, not read into every later command. */
const maxFileBytes = 1024 * 1024;

export interface OutputFiles {
  /** The environment variables that name the directory and the JSON file. */
  env: Record<string, string>;
  /** Reads what the command wrote; throws TEND_EXEC_FAILED for a JSON file that is not an object. */
  read(log: PluginLog, ref: string): Record<string, string>;
  /** Removes the directory. */
  remove(): void;
}

export function outputFiles(): OutputFiles {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-exec-outputs-'));
  return {
    env: {
      GARDEN_ACTION_OUTPUTS_PATH: dir,
      GARDEN_ACTION_JSON_OUTPUTS_PATH: path.join(dir, jsonFile),
    },
    read: (log, ref) => readOutputFiles(dir, log, ref),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function readOutputFiles(dir: string, log: PluginLog, ref: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    // The command removed its directory: nothing written.
    return outputs;
  }
  const skip = (what: string, why: string) => log.warn(`${ref}: ${what} ${why}, skipped`);
  const keyProblem = (key: string) =>
    reservedKeys.has(key)
      ? 'is an output of its own'
      : outputKey.test(key)
        ? undefined
        : 'is not an output name';
  if (names.includes(jsonFile)) {
    const file = path.join(dir, jsonFile);
    const parsed = parseJson(readText(file, ref));
    if (parsed === undefined || parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new TendError(
        'TEND_EXEC_FAILED',
        `${ref}: $GARDEN_ACTION_JSON_OUTPUTS_PATH (${jsonFile}) holds no JSON object of outputs`,
        { detail: { file } },
      );
    }
    for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
      const problem = keyProblem(key);
      if (problem) skip(`key ${JSON.stringify(key)} of ${jsonFile}`, problem);
      else if (value !== null && typeof value === 'object')
        skip(`key ${JSON.stringify(key)} of ${jsonFile}`, 'is not a single value');
      else outputs[key] = String(value);
    }
  }
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const problem = keyProblem(name);
    const file = path.join(dir, name);
    if (problem) skip(`output file ${JSON.stringify(name)}`, problem);
    else if (statSync(file).isDirectory()) skip(`output file ${JSON.stringify(name)}`, 'is a directory');
    else outputs[name] = readText(file, ref).replace(/\r?\n$/, '');
  }
  return outputs;
}

function readText(file: string, ref: string): string {
  if (statSync(file).size > maxFileBytes) {
    throw new TendError(
      'TEND_EXEC_FAILED',
      `${ref}: the output file ${path.basename(file)} is over ${maxFileBytes / 1024 / 1024} MiB; an output is a value, not a file's content`,
      { detail: { file } },
    );
  }
  return readFileSync(file, 'utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
