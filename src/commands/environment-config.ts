/**
 * A command's configuration in one environment: the command line's --root, --env, --var and
 * --var-file handed to the configuration pipeline (src/config/pipeline.ts), which runs its steps
 * once. `tend validate` and every command that opens a project step into the configuration here.
 */
import path from 'node:path';
import type { GlobalOptions } from '../cli/output.js';
import type { Configuration } from '../config/configuration.js';
import { configure } from '../config/pipeline.js';
import type { PluginDefinition } from '../plugin/types.js';
import { parseEnvFlag } from '../config/environment.js';
import { loadSecrets } from '../remote/secrets.js';

/** What a command asks of its environment's configuration besides the global flags. */
export interface EnvironmentRequest {
  /** The namespace instead of the environment's own (`tend restore`: the archived one, or `--into`). */
  namespace?: string;
  /** Disabled actions to enable anyway, by ref (`tend run <name> --force`). */
  forceEnabled?: readonly string[];
}

export function configureEnvironment(
  options: GlobalOptions,
  builtins: PluginDefinition[],
  request: EnvironmentRequest = {},
): Promise<Configuration> {
  const { env, namespace: envNamespace } = parseEnvFlag(options.env);
  const namespace = request.namespace ?? envNamespace;
  return configure({
    root: options.root ? path.resolve(options.root) : undefined,
    cwd: process.cwd(),
    plugins: builtins,
    env,
    vars: options.var ?? [],
    varFiles: options.varFile,
    ...(options.commandInfo ? { command: options.commandInfo } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(options.context?.[0] ? { context: options.context[0] } : {}),
    secrets: loadSecrets,
    ...(request.forceEnabled ? { forceEnabled: request.forceEnabled } : {}),
  });
}
