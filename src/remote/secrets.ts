/**
 * The project secrets a command's templates read (`${secrets.*}`, docs/templates.md#secrets):
 * loaded only when the configuration uses them — from the local secrets file when there is one,
 * else from the tend server with the command's token (a developer or admin token of the project).
 * Every value loaded is registered for redaction (src/redact.ts): printed output, the event log
 * and the outbox show `***` instead.
 */
import type { ProjectConfig } from '../config/project.js';
import { localSecretsFile, readSecretsFile } from '../config/secrets-file.js';
import type { TemplateContext } from '../config/template-context.js';
import { TendError } from '../errors.js';
import { redactUrl, registerSecretValues } from '../redact.js';
import { apiRequest } from './client.js';
import { resolveServer } from './credentials.js';

type SecretsContext = NonNullable<TemplateContext['secrets']>;

/**
 * The secrets of the project's environment; the configuration asks only when it reads them
 * (otherwise no file and no server is asked: src/config/resolve-templates.ts).
 */
export async function loadSecrets(
  project: ProjectConfig,
  environment: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SecretsContext> {
  const loaded = await fetchSecrets(project, environment, env);
  registerSecretValues(Object.values(loaded.values));
  return loaded;
}

async function fetchSecrets(
  project: ProjectConfig,
  environment: string,
  env: NodeJS.ProcessEnv,
): Promise<SecretsContext> {
  const file = localSecretsFile(project.root, env);
  if (file) {
    return {
      values: readSecretsFile(file, environment),
      source: `in the local secrets file ${file} (environment ${environment})`,
    };
  }
  const server = resolveServer(project.server ? { server: project.server } : {}, env);
  if (!server) {
    return {
      values: {},
      source:
        `for project ${project.name}: no tend server is configured (tend login, TEND_SERVER_URL or server: in the project) ` +
        `and there is no local secrets file (${project.root}/.tend/secrets.yml or TEND_SECRETS_FILE)`,
    };
  }
  const where = `${redactUrl(server.url)} (project ${project.name}, environment ${environment})`;
  if (!server.token) {
    throw new TendError(
      'TEND_AUTH',
      `the configuration reads \${secrets.…}, and there is no token for ${where}`,
      {
        detail: { hint: 'tend login --server URL --token T (a developer or admin token), or set TEND_TOKEN' },
      },
    );
  }
  const path = `/api/v1/projects/${encodeURIComponent(project.name)}/environments/${encodeURIComponent(environment)}/secret-values`;
  const answer = await apiRequest<{ values: Record<string, string> }>(
    { url: server.url, token: server.token },
    path,
  );
  return { values: answer.values, source: `on the tend server ${where}` };
}
