/** `GET /api/v1/auth/whoami`: which token this is (name, scope, project) — `tend login` checks with it. */
import { Type } from 'typebox';
import type { App, ServerServices } from '../services.js';
import { ErrorResponse } from '../../api/views.js';
import { bearerPrincipal } from '../auth.js';

export function registerAuthRoutes(app: App, _services: ServerServices): void {
  app.get(
    '/api/v1/auth/whoami',
    {
      config: { permission: 'ingest' },
      schema: {
        operationId: 'whoAmI',
        summary: 'The token making the request',
        tags: ['auth'],
        response: {
          200: Type.Object({
            name: Type.String(),
            scope: Type.String(),
            project: Type.Union([Type.String(), Type.Null()]),
          }),
          401: ErrorResponse,
        },
      },
    },
    async (request) => {
      const token = bearerPrincipal(request.principal);
      return { name: token.tokenName, scope: token.scope, project: token.project };
    },
  );
}
