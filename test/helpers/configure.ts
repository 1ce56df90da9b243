/** Loading a project's configuration in tests: the error it fails with, and that error in one line. */
import { configure } from '../../src/config/pipeline.js';
import type { TendError } from '../../src/errors.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';

/** The error `configure` throws for the project in `root` (the test fails when it loads). */
export async function configureError(root: string, vars: string[] = []): Promise<TendError> {
  const error = await configure({
    cwd: root,
    plugins: builtinPlugins(),
    secrets: () => Promise.resolve(undefined),
    vars,
  }).then(
    () => undefined,
    (e: unknown) => e as TendError,
  );
  if (!error) throw new Error('the configuration loaded');
  return error;
}

/** An error's code, file:line and message, as one line to compare. */
export const describedError = (error: TendError) =>
  `${error.code} ${error.location?.file}:${error.location?.line} ${error.message}`;
