/**
 * The OpenAPI document as outside tools read it: valid OpenAPI 3.1 for a real validator
 * (@readme/openapi-parser: the specification's JSON Schema and its rules), and every operation
 * named by a stable camelCase operationId, unique, so that generated clients get the names listed
 * in docs/server.md rather than invented ones. (What statuses each route documents:
 * openapi.test.ts.)
 */
import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from './helpers.js';

type Document = { paths: Record<string, Record<string, { operationId?: string }>> };

/** Every operation's id, by `METHOD path`: a change here breaks generated clients. */
const operationIds: Record<string, string> = {
  'GET /healthz': 'checkLiveness',
  'GET /readyz': 'checkReadiness',
  'GET /metrics': 'getMetrics',
  'GET /api/v1/auth/whoami': 'whoAmI',
  'POST /api/v1/events': 'ingestEvents',
  'GET /api/v1/environments': 'listEnvironments',
  'GET /api/v1/environments/{id}': 'getEnvironment',
  'GET /api/v1/environments/{id}/events': 'listEnvironmentEvents',
  'POST /api/v1/environments/{id}/protect': 'protectEnvironment',
  'POST /api/v1/environments/{id}/unprotect': 'unprotectEnvironment',
  'POST /api/v1/environments/{id}/keep-alive': 'keepEnvironmentAlive',
  'POST /api/v1/environments/{id}/cleanup': 'cleanUpEnvironmentNow',
  'POST /api/v1/environments/{id}/resume': 'resumeEnvironment',
  'GET /api/v1/environments/{id}/archive': 'getEnvironmentArchive',
  'POST /api/v1/environments/{id}/archive/restored': 'recordArchiveRestored',
  'POST /api/v1/environments/{id}/restore': 'restoreEnvironment',
  'GET /api/v1/audit': 'listAuditEntries',
  'POST /api/v1/agents/heartbeat': 'executorHeartbeat',
  'POST /api/v1/agents/inventory': 'reportInventory',
  'POST /api/v1/cleanup/jobs/claim': 'claimCleanupJobs',
  'POST /api/v1/cleanup/jobs/{id}/start': 'startCleanupJob',
  'POST /api/v1/cleanup/jobs/{id}/events': 'recordRestoreEvents',
  'POST /api/v1/cleanup/jobs/{id}/complete': 'completeCleanupJob',
  'POST /api/v1/cleanup/jobs/{id}/archive': 'storeJobArchive',
  'GET /api/v1/cleanup/jobs/{id}/archive': 'getRestoreJobArchive',
  'GET /api/v1/cleanup/plan': 'getCleanupPlan',
  'GET /api/v1/cleanup/notice': 'getCleanupNotice',
  'GET /api/v1/cleanup/jobs': 'listCleanupJobs',
  'GET /api/v1/cleanup/status': 'getCleanupStatus',
  'GET /api/v1/cleanup/report': 'getCleanupReport',
  'POST /api/v1/cleanup/enforce': 'enforceCleanupPolicy',
  'POST /api/v1/cleanup/halt': 'haltCleanup',
  'POST /api/v1/cleanup/resume': 'unhaltCleanup',
  'POST /api/v1/cleanup/breakers/{project}/reset': 'resetCleanupBreaker',
  'GET /api/v1/tokens': 'listTokens',
  'POST /api/v1/tokens': 'createToken',
  'POST /api/v1/tokens/{token}/revoke': 'revokeToken',
  'GET /api/v1/webhooks': 'listWebhooks',
  'POST /api/v1/webhooks': 'addWebhook',
  'DELETE /api/v1/webhooks/{id}': 'removeWebhook',
  'GET /api/v1/projects/{project}/secrets': 'listSecrets',
  'PUT /api/v1/projects/{project}/secrets/{name}': 'setSecret',
  'DELETE /api/v1/projects/{project}/secrets/{name}': 'deleteSecret',
  'GET /api/v1/projects/{project}/environments/{environment}/secret-values': 'readSecretValues',
  'POST /api/v1/integrations/github': 'receiveGithubWebhook',
};

describe('the OpenAPI document, as outside tools read it', () => {
  let s: TestServer;
  let doc: Document;
  beforeAll(async () => {
    // With the GitHub secret: every route the server can have is in the document.
    s = await createTestServer('sqlite', { githubSecret: 'openapi-document-test-secret' });
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json<Document>();
  });
  afterAll(async () => s?.close());

  it('is valid OpenAPI 3.1 for a validator', async () => {
    // The validator may dereference the document in place: it gets a copy.
    const result = await validate(structuredClone(doc) as Parameters<typeof validate>[0]);
    expect(result.valid ? '' : compileErrors(result)).toBe('');
    expect(result.specification).toBe('OpenAPI');
    expect(result.warnings).toEqual([]);
  });

  it('names every operation with a stable, unique camelCase operationId', () => {
    const found: Record<string, string | undefined> = {};
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        found[`${method.toUpperCase()} ${path}`] = operation.operationId;
      }
    }
    const ids = Object.values(found);
    for (const [operation, id] of Object.entries(found)) {
      expect(id, `${operation} has no operationId`).toMatch(/^[a-z][a-zA-Z0-9]*$/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(found).toEqual(operationIds);
  });
});
