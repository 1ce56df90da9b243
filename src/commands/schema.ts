/**
 * `tend schema`: the JSON Schema of tend.yml and *.tend.yml documents, for editor completion
 * and validation (e.g. `# yaml-language-server: $schema=./tend.schema.json`).
 */
import type { CommandResult } from '../cli/output.js';
import { buildJsonSchema } from '../config/schema.js';
import { ExitCode } from '../errors.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';

export async function schemaCommand(
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<Record<string, unknown>>> {
  const schema = buildJsonSchema(plugins);
  return { data: schema, human: JSON.stringify(schema, null, 2), exitCode: ExitCode.ok };
}
