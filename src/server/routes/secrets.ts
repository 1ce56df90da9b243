/**
 * The project secrets of `${secrets.NAME}`. Admins write them (`admin`):
 * `GET /api/v1/projects/:project/secrets` (names and times, never values),
 * `PUT /api/v1/projects/:project/secrets/:name` and `DELETE …/:name` (`?environment=` for an
 * environment's own value; without it, the project-wide one) — audited `secret-set` and
 * `secret-deleted`, without the value. The CLI resolving a project's templates reads the values
 * (`secrets`: developer and admin): `GET /api/v1/projects/:project/environments/:environment/secret-values`.
 * A token bound to another project is refused (403) before anything is read: its project is
 * named, never whether the other one has secrets.
 */
import { Type } from 'typebox';
import { ErrorResponse } from '../../api/views.js';
import { namePattern, nameMaxLength } from '../../config/project.js';
import { TendError } from '../../errors.js';
import { actorOf, allows, projectBindingPattern, type Permission, type Principal } from '../auth.js';
import { secretNamePattern, secretValueMaxLength } from '../secrets.js';
import type { App, ServerServices } from '../services.js';

const ProjectParams = Type.Object({ project: Type.String({ pattern: projectBindingPattern.source }) });
const SecretParams = Type.Object({
  project: Type.String({ pattern: projectBindingPattern.source }),
  name: Type.String({ pattern: secretNamePattern.source }),
});
const EnvironmentName = Type.String({ pattern: namePattern, maxLength: nameMaxLength });
const ValuesParams = Type.Object({
  project: Type.String({ pattern: projectBindingPattern.source }),
  environment: EnvironmentName,
});
const EnvironmentQuery = Type.Object(
  {
    environment: Type.Optional(
      Type.String({
        ...EnvironmentName,
        description: "An environment's own value; without it, the project-wide one.",
      }),
    ),
  },
  { additionalProperties: false },
);
const SecretBody = Type.Object(
  { value: Type.String({ maxLength: secretValueMaxLength }) },
  { additionalProperties: false },
);
const SecretView = Type.Object({
  name: Type.String(),
  environment: Type.Union([Type.String(), Type.Null()], { description: 'null: project-wide.' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  updatedBy: Type.String(),
});
const errors = { 401: ErrorResponse, 403: ErrorResponse, 503: ErrorResponse };

/** The route's permission in this project; a token bound to another project is a 403 naming its own. */
function checkProject(principal: Principal | null, permission: Permission, project: string): Principal {
  if (!principal || !allows(principal, permission, project)) {
    throw new TendError(
      'TEND_AUTH_FORBIDDEN',
      principal?.project
        ? `token "${principal.tokenName}" is bound to project ${principal.project}; it may not use the secrets of another project`
        : `the secrets of project ${project} are not open to this principal`,
    );
  }
  return principal;
}

export function registerSecretRoutes(app: App, services: ServerServices): void {
  const secrets = services.secrets;

  app.get(
    '/api/v1/projects/:project/secrets',
    {
      config: { permission: 'admin' },
      schema: {
        operationId: 'listSecrets',
        summary: "A project's secrets: names, environments and update times, never values (admin)",
        tags: ['secrets'],
        params: ProjectParams,
        response: { 200: Type.Object({ items: Type.Array(SecretView) }), ...errors },
      },
    },
    async (request) => {
      checkProject(request.principal, 'admin', request.params.project);
      return { items: await secrets.list(request.params.project) };
    },
  );

  app.put(
    '/api/v1/projects/:project/secrets/:name',
    {
      config: { permission: 'admin' },
      schema: {
        operationId: 'setSecret',
        summary: 'Set a secret (sealed at rest); the value is never answered back (admin)',
        tags: ['secrets'],
        params: SecretParams,
        querystring: EnvironmentQuery,
        body: SecretBody,
        response: { 200: SecretView, 413: ErrorResponse, ...errors },
      },
    },
    async (request) => {
      const principal = checkProject(request.principal, 'admin', request.params.project);
      const place = { project: request.params.project, environment: request.query.environment };
      return secrets.set(place, request.params.name, request.body.value, actorOf(principal));
    },
  );

  app.delete(
    '/api/v1/projects/:project/secrets/:name',
    {
      config: { permission: 'admin' },
      schema: {
        operationId: 'deleteSecret',
        summary: 'Delete a secret (admin)',
        tags: ['secrets'],
        params: SecretParams,
        querystring: EnvironmentQuery,
        response: {
          200: Type.Object({ name: Type.String(), environment: Type.Union([Type.String(), Type.Null()]) }),
          404: ErrorResponse,
          ...errors,
        },
      },
    },
    async (request) => {
      const principal = checkProject(request.principal, 'admin', request.params.project);
      const place = { project: request.params.project, environment: request.query.environment };
      await secrets.delete(place, request.params.name, actorOf(principal));
      return { name: request.params.name, environment: request.query.environment ?? null };
    },
  );

  app.get(
    '/api/v1/projects/:project/environments/:environment/secret-values',
    {
      config: { permission: 'secrets' },
      schema: {
        operationId: 'readSecretValues',
        summary:
          "The secret values an environment's templates read: project-wide, overridden by the environment's (developer)",
        description: 'What the CLI reads to resolve `${secrets.*}`; the answer is never logged.',
        tags: ['secrets'],
        params: ValuesParams,
        response: { 200: Type.Object({ values: Type.Record(Type.String(), Type.String()) }), ...errors },
      },
    },
    async (request) => {
      checkProject(request.principal, 'secrets', request.params.project);
      return { values: await secrets.values(request.params.project, request.params.environment) };
    },
  );
}
