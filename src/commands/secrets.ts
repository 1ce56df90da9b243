/**
 * `tend secrets set|list|delete`: the project secrets `${secrets.NAME}` reads, kept by the tend
 * server (admin token). `--env` names an environment's own value; without it, the project-wide
 * one. A value is read from stdin or `--value-file`, never from the command line (where `ps`
 * shows it), and never printed back.
 */
import { readFileSync } from 'node:fs';
import { formatTable, type CommandResult, type GlobalOptions } from '../cli/output.js';
import { parseEnvFlag } from '../config/environment.js';
import { loadProjectConfig } from '../config/pipeline.js';
import { builtinPlugins } from '../plugins/builtin.js';
import { secretNamePattern, secretValueMaxLength } from '../config/secrets-file.js';
import { TendError } from '../errors.js';
import { apiRequest } from '../remote/client.js';
import { requireServer } from '../remote/credentials.js';

export interface SecretsOptions extends GlobalOptions {
  project?: string;
  server?: string;
  token?: string;
  valueFile?: string;
}

interface SecretView {
  name: string;
  environment: string | null;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
}

/** The project (--project, else the current directory's) and the server to ask. */
async function target(options: SecretsOptions) {
  let project = options.project;
  let projectServer: string | undefined;
  if (project === undefined) {
    const loaded = await loadProjectConfig({
      root: options.root,
      cwd: process.cwd(),
      plugins: builtinPlugins(),
    }).catch((error: unknown) => {
      throw new TendError(
        'TEND_USAGE',
        `name the project with --project <name>: ${(error as Error).message}`,
      );
    });
    project = loaded.project.name;
    projectServer = loaded.project.server;
  }
  const connection = requireServer({ server: options.server ?? projectServer, token: options.token });
  return { project, connection: { url: connection.url, token: connection.token } };
}

function checkName(name: string): void {
  if (!secretNamePattern.test(name)) {
    throw new TendError(
      'TEND_USAGE',
      `"${name.slice(0, 80)}" is not a secret name: letters, digits, "_" and "-", not a digit first, at most 64`,
    );
  }
}

function secretPath(project: string, name: string, environment: string | undefined): string {
  const query = environment ? `?environment=${encodeURIComponent(environment)}` : '';
  return `/api/v1/projects/${encodeURIComponent(project)}/secrets/${encodeURIComponent(name)}${query}`;
}

/** The environment of `--env`: a secret is the environment's, whatever namespace `<namespace>.<env>` names. */
const environmentOf = (options: SecretsOptions) => parseEnvFlag(options.env).env;

const where = (project: string, environment: string | undefined) =>
  environment ? `project ${project}, environment ${environment}` : `project ${project} (every environment)`;

/** The value: the file's, or stdin's, without one trailing newline. */
function readValue(options: SecretsOptions): string {
  let text: string;
  try {
    text = readFileSync(options.valueFile ?? 0, 'utf8');
  } catch (error) {
    throw new TendError(
      'TEND_USAGE',
      `cannot read the value from ${options.valueFile ?? 'stdin'}: ${(error as Error).message}`,
    );
  }
  const value = text.replace(/\r?\n$/, '');
  if (value.length === 0 || value.length > secretValueMaxLength) {
    throw new TendError(
      'TEND_USAGE',
      `a secret's value is 1 to ${secretValueMaxLength} characters, read from stdin or --value-file (got ${value.length})`,
    );
  }
  return value;
}

export async function setSecretCommand(
  name: string,
  options: SecretsOptions,
): Promise<CommandResult<SecretView>> {
  checkName(name);
  const environment = environmentOf(options);
  const value = readValue(options);
  const { project, connection } = await target(options);
  const view = await apiRequest<SecretView>(connection, secretPath(project, name, environment), {
    method: 'PUT',
    body: { value },
  });
  return { data: view, human: `secret ${name} set for ${where(project, environment)}`, exitCode: 0 };
}

export async function listSecretsCommand(options: SecretsOptions): Promise<CommandResult<SecretView[]>> {
  const { project, connection } = await target(options);
  const { items } = await apiRequest<{ items: SecretView[] }>(
    connection,
    `/api/v1/projects/${encodeURIComponent(project)}/secrets`,
  );
  const human =
    items.length === 0
      ? `project ${project} has no secrets`
      : formatTable(
          ['NAME', 'ENVIRONMENT', 'UPDATED', 'BY'],
          items.map((s) => [s.name, s.environment ?? '(every)', s.updatedAt, s.updatedBy]),
        );
  return { data: items, human, exitCode: 0 };
}

export async function deleteSecretCommand(
  name: string,
  options: SecretsOptions,
): Promise<CommandResult<{ name: string; environment: string | null }>> {
  checkName(name);
  const environment = environmentOf(options);
  const { project, connection } = await target(options);
  const deleted = await apiRequest<{ name: string; environment: string | null }>(
    connection,
    secretPath(project, name, environment),
    { method: 'DELETE' },
  );
  return { data: deleted, human: `secret ${name} deleted from ${where(project, environment)}`, exitCode: 0 };
}
