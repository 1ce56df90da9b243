/**
 * Loading a project's configuration in tests as commands load it (builtin plugins, no secrets):
 * the configuration, an action's resolved command, and the error a load fails with.
 */
import { expect } from 'vitest';
import { configure } from '../../src/config/pipeline.js';
import { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';

export const configureAt = (root: string, vars: string[] = []) =>
  configure({ cwd: root, plugins: builtinPlugins(), secrets: () => Promise.resolve(undefined), vars });

/** The `command` of an action's spec, resolved as it runs. */
export async function specCommand(root: string, ref: string): Promise<unknown> {
  const configuration = await configureAt(root);
  const action = configuration.actions.find((a) => a.ref === ref)!;
  return (configuration.resolveSpec(action, { keepActionOutputs: false }) as { command: unknown }).command;
}

/** The TendError a promise is rejected with (the test fails when it resolves). */
export async function failure(promise: Promise<unknown>): Promise<TendError> {
  const error: unknown = await promise.then(
    () => new Error('expected a TendError'),
    (rejected: unknown) => rejected,
  );
  expect(error).toBeInstanceOf(TendError);
  return error as TendError;
}

/** The error loading the project in `root` fails with. */
export const configureError = (root: string, vars: string[] = []) => failure(configureAt(root, vars));

/** An error's code, file:line and message, as one line to compare. */
export const describedError = (error: TendError) =>
  `${error.code} ${error.location?.file}:${error.location?.line} ${error.message}`;
