/** What every dashboard route has in common: it is left out of the OpenAPI document. */
import type { FastifyRequest } from 'fastify';

export const hidden = { hide: true } as const;

/** The filter forms send empty fields for "any": they are dropped before validation. */
export async function dropEmptyQueryFields(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>;
  for (const key of Object.keys(query)) if (query[key] === '') delete query[key];
}
