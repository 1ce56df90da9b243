/**
 * Garden 0.14's version controls: the Project's `excludeValuesFromActionVersions` and an action's
 * `version` (`excludeDependencies`, `excludeFields`, `excludeFiles`, `excludeValues`), which make
 * Garden's versions leave some inputs out. Accepted and ignored, one note each: tend's versions
 * keep covering those inputs, so an action may run again where Garden's would not, but a result is
 * never reused for inputs that changed. Their shape is checked all the same, as Garden checks it.
 */
import { Type, type TSchema } from 'typebox';
import { schemaCheck } from '../../schema-check.js';
import type { ConfigPath } from '../project.js';
import { isRecord, refuseUnknownKeys, type Translation } from './translation.js';

const ignoredBecause =
  "tend's versions cover them (an action may run again where Garden's would not, never a stale result); ignored";

/** Garden's sparse lists: a `null` entry (an optional template with no value) is left out. */
const strings = Type.Array(Type.Union([Type.String(), Type.Null()]));

/** Each key of `version`, its shape (Garden's `actions/base.ts`) and what to say when it is not that. */
const versionKeys: Record<string, { schema: TSchema; expected: string }> = {
  excludeDependencies: {
    schema: Type.Array(
      Type.Union([Type.String(), Type.Null(), Type.Object({ kind: Type.String(), name: Type.String() })]),
    ),
    expected: 'a list of action references (run.setup, or { kind: Run, name: setup })',
  },
  excludeFields: {
    schema: Type.Array(Type.Array(Type.String())),
    expected: 'a list of field paths, each a list of keys ([spec, env, HOSTNAME])',
  },
  excludeFiles: { schema: strings, expected: 'a list of file patterns' },
  excludeValues: {
    schema: strings,
    expected: 'a list of strings (the values to leave out, usually templates)',
  },
};

/** The Project's `excludeValuesFromActionVersions`: checked, noted, left out of what tend reads. */
export function ignoreProjectVersionSettings(
  translation: Translation,
  project: Record<string, unknown>,
): void {
  const key = 'excludeValuesFromActionVersions';
  if (project[key] === undefined) return;
  if (!schemaCheck(strings).Check(project[key])) {
    translation.invalid(
      [key],
      `${key} must be a list of strings (the values to leave out, usually templates)`,
    );
  } else {
    translation.note(
      [key],
      `${key}: Garden leaves these values out of every action's version; ${ignoredBecause}`,
    );
  }
  delete project[key];
}

/** An action's `version`: checked key by key (a misspelt one at its line) and noted once. */
export function ignoreActionVersionSettings(translation: Translation, version: unknown): void {
  const at: ConfigPath = ['version'];
  if (!isRecord(version)) {
    translation.invalid(at, `version must be a mapping of ${Object.keys(versionKeys).join(', ')}`);
    return;
  }
  const known = refuseUnknownKeys(translation, version, Object.keys(versionKeys), at);
  let valid = Object.keys(known).length === Object.keys(version).length;
  for (const [key, value] of Object.entries(known)) {
    const { schema, expected } = versionKeys[key]!;
    if (value === undefined || value === null || schemaCheck(schema).Check(value)) continue;
    translation.invalid([...at, key], `version.${key} must be ${expected}`);
    valid = false;
  }
  if (valid) {
    translation.note(
      at,
      `version (${Object.keys(version).join(', ')}): Garden leaves these inputs out of the action's version; ${ignoredBecause}`,
    );
  }
}
