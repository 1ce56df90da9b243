/**
 * `POST /api/v1/events`: batch ingest (docs/design.md#event-stream, #server-and-cleanup). Each event is checked against the event
 * catalogue; one bad event rejects the batch with 400 naming its index and field. A batch is
 * stored in one transaction and is idempotent by event id. A plugin's own type is kept whether
 * or not the server knows the plugin. `GET /api/v1/environments/:id/events`: an environment's
 * events with their payloads, filtered by type.
 */
import { Type } from 'typebox';
import { eventCatalog, EventEnvelope, eventTypes, type TendEvent } from '../../events/catalog.js';
import { pluginEventTypePattern } from '../../events/plugin-types.js';
import { AnyKey } from '../../schema-check.js';
import { visibleEnvironment } from '../environment-queries.js';
import { eventView } from '../views.js';
import { TendError } from '../../errors.js';
import type { App, ServerServices } from '../services.js';
import { ingestBatch, validateBatch } from '../registry/batch.js';
import { ErrorResponse, EventView } from '../../api/views.js';
import { monotonicMs } from '../../monotonic.js';

/** For the OpenAPI document: each event type with its payload schema, built from the catalogue. */
const DocumentedEvent = Type.Union(
  eventTypes.map((t) =>
    Type.Object(
      {
        id: EventEnvelope.properties.id,
        type: Type.Literal(t),
        sessionId: EventEnvelope.properties.sessionId,
        timestamp: EventEnvelope.properties.timestamp,
        sequence: EventEnvelope.properties.sequence,
        payload: eventCatalog[t],
      },
      { additionalProperties: false },
    ),
  ),
);

/** A plugin's own type (`<plugin>.<name>`): stored as it came, whether or not the server knows the plugin. */
const DocumentedPluginEvent = Type.Object(
  {
    id: EventEnvelope.properties.id,
    type: Type.String({
      pattern: pluginEventTypePattern,
      description: "A plugin's own type: `<plugin>.<name>`.",
    }),
    sessionId: EventEnvelope.properties.sessionId,
    timestamp: EventEnvelope.properties.timestamp,
    sequence: EventEnvelope.properties.sequence,
    payload: Type.Record(AnyKey(), Type.Unknown()),
  },
  { additionalProperties: false },
);

const IngestBody = Type.Object({ events: Type.Array(Type.Union([DocumentedEvent, DocumentedPluginEvent])) });

const EnvironmentEventsQuery = Type.Object({
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 127,
      description:
        "Only events of this type: a core type (`namespaceStatus`) or a plugin's (`buckets.bucketCreated`).",
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
});
const EnvironmentEventsResponse = Type.Object({ items: Type.Array(EventView) });
const IngestResponse = Type.Object({
  accepted: Type.Integer({ description: 'Events stored by this request.' }),
  duplicates: Type.Integer({
    description: 'Events already stored (by id): accepted before, changed nothing.',
  }),
});

export function registerEventRoutes(app: App, services: ServerServices): void {
  app.get(
    '/api/v1/environments/:id/events',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'listEnvironmentEvents',
        summary: "An environment's events, newest first, with their payloads; filtered by type",
        tags: ['events'],
        params: Type.Object({ id: Type.String() }),
        querystring: EnvironmentEventsQuery,
        response: {
          200: EnvironmentEventsResponse,
          400: ErrorResponse,
          401: ErrorResponse,
          403: ErrorResponse,
          404: ErrorResponse,
        },
      },
    },
    async (request) => {
      const env = await visibleEnvironment(services, request.params.id, request.principal);
      const { type, limit } = request.query;
      const events = await services.environments.timeline(env.id, limit ?? 100, type);
      return { items: events.map(eventView) };
    },
  );

  app.post(
    '/api/v1/events',
    {
      config: { permission: 'ingest', checksItemsAlone: true },
      bodyLimit: services.limits.bodyLimit,
      schema: {
        operationId: 'ingestEvents',
        summary: 'Ingest a batch of events',
        description:
          'Idempotent by event id: a re-sent event is counted in `duplicates` and changes nothing. ' +
          `At most ${services.limits.maxEventsPerBatch} events and ${services.limits.bodyLimit} bytes per batch (413 beyond).`,
        tags: ['events'],
        body: IngestBody,
        response: {
          200: IngestResponse,
          400: ErrorResponse,
          401: ErrorResponse,
          403: ErrorResponse,
          413: ErrorResponse,
        },
      },
      // The catalogue validates (validateBatch): its messages name the event's index and field.
      validatorCompiler: () => (value: unknown) => ({ value }),
    },
    async (request) => {
      const receivedAt = services.now();
      const started = monotonicMs();
      let events: TendEvent[];
      try {
        events = validateBatch(request.body, services.limits.maxEventsPerBatch);
        const only = request.principal?.project;
        if (only) {
          events.forEach((e, index) => {
            const project = (e.payload as { project?: unknown }).project;
            if (project !== undefined && project !== only) {
              throw new TendError(
                'TEND_AUTH_FORBIDDEN',
                `events[${index}]: token "${request.principal?.tokenName}" may only send events of project "${only}", not "${String(project)}"`,
                { detail: { index } },
              );
            }
          });
        }
      } catch (error) {
        services.metrics.recordBatch('rejected');
        throw error;
      }
      let result;
      try {
        // On SQLite the writer thread runs the whole batch; elsewhere it runs here.
        result = await ingestBatch(
          services.database.db,
          services.database.dialect,
          events,
          receivedAt,
          request.principal?.project ?? null,
        );
      } catch (error) {
        if (error instanceof TendError) services.metrics.recordBatch('rejected');
        throw error;
      }
      services.metrics.recordBatch(
        'accepted',
        result.accepted,
        result.duplicates,
        (monotonicMs() - started) / 1000,
      );
      return result;
    },
  );
}
