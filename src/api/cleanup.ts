/**
 * The cleanup plan as the API answers it (`GET /api/v1/cleanup/plan`) and the CLI reads it
 * (`tend cleanup plan`, `tend status`, `tend envs <id>`, every command's warning line), and the
 * state of cleanup (`GET /api/v1/cleanup/status`, `tend cleanup status`).
 */
import { Type, type Static } from 'typebox';
import { blockReasons, decisionKinds } from '../cleanup/decisions.js';
import { AnyKey } from '../schema-check.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const Time = () => Type.String({ format: 'date-time' });

export const PlanItemView = Type.Object({
  kind: Type.Enum(decisionKinds),
  reason: Type.Union([Type.Enum(blockReasons), Type.Null()]),
  action: Type.String(),
  environmentId: Type.String(),
  project: Type.String(),
  environment: Type.String(),
  namespace: Type.String(),
  resourceId: Type.String(),
  targetKey: Type.String(),
  pluginName: Type.String(),
  dueAt: Time(),
  lastActivityAt: Time(),
  sentence: Type.String(),
  jobId: Nullable(Type.String()),
  decidedAt: Time(),
  warnAt: Type.Union([Time(), Type.Null()], {
    description: "A scheduled decision's warning time: due time minus the policy's warnBefore (default 1h).",
  }),
  warning: Type.Boolean({
    description:
      'True when the warning time has come: the environment "will be deleted at …" (`tend keep-alive` to postpone).',
  }),
  dueLocal: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description:
        "When the policy's schedule decided: the due time in the schedule's time zone (`2026-03-30 19:00 +02:00 Europe/Berlin`); null otherwise (absent from servers before it).",
    }),
  ),
});
export type PlanItemView = Static<typeof PlanItemView>;

/** A schedule's next sleep or wake of one environment, with its local and UTC times. */
export const TransitionView = Type.Object({
  environmentId: Type.String(),
  project: Type.String(),
  environment: Type.String(),
  /** `sleep`: paused by the schedule; `wake`: resumed (if the schedule paused it). */
  kind: Type.Union([Type.Literal('sleep'), Type.Literal('wake')]),
  at: Type.String({ format: 'date-time' }),
  /** `2026-03-30 08:00 +02:00 Europe/Berlin`. */
  local: Type.String(),
  /** `2026-03-30 06:00 UTC`. */
  utc: Type.String(),
});
export type TransitionView = Static<typeof TransitionView>;

/** The state of cleanup (`GET /api/v1/cleanup/status`, `tend cleanup status`). */
/**
 * How a planning pass ended: `ok`; `partial` (environments it could not work out were left out,
 * the others planned); `failed` (an error stopped it); `skipped` (it planned nothing on purpose —
 * a step of the wall clock).
 */
export const passOutcomes = ['ok', 'partial', 'failed', 'skipped'] as const;
export type PassOutcome = (typeof passOutcomes)[number];

export const CleanupStatusView = Type.Object({
  halted: Type.Boolean(),
  haltedBy: Nullable(Type.String()),
  haltedAt: Nullable(Time()),
  lastPassAt: Nullable(Time()),
  lastPassMs: Type.Union([Type.Integer(), Type.Null()]),
  /** How the last planning pass ended; null: none yet. */
  lastPassOutcome: Type.Union([Type.Enum(passOutcomes), Type.Null()]),
  /** Why it was not `ok`. */
  lastPassNote: Type.Union([Type.String(), Type.Null()]),
  breakers: Type.Array(
    Type.Object({
      project: Type.String(),
      openedAt: Time(),
      due: Type.Integer(),
      active: Type.Integer(),
    }),
  ),
  policies: Type.Array(
    Type.Object({
      project: Type.String(),
      environment: Type.String(),
      afterInactivityMs: Type.Integer(),
      action: Type.String(),
      enforcedAt: Time(),
      enforcedBy: Type.String(),
    }),
  ),
  executors: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      kind: Type.String(),
      version: Type.String(),
      targetKey: Type.String(),
      pluginName: Type.String(),
      description: Type.String(),
      lastSeenAt: Time(),
    }),
  ),
  suspectInventories: Type.Array(
    Type.Object({
      targetKey: Type.String(),
      pluginName: Type.String(),
      reason: Type.String(),
      since: Time(),
      lastSeenAt: Time(),
      wouldMarkMissing: Type.Integer(),
      recorded: Type.Integer(),
    }),
  ),
  unrecorded: Type.Array(
    Type.Object({
      targetKey: Type.String(),
      namespace: Type.String(),
      uid: Type.String(),
      phase: Type.String(),
      project: Nullable(Type.String()),
      environment: Nullable(Type.String()),
      environmentId: Nullable(Type.String()),
      detail: Type.Record(AnyKey(), Type.String()),
      firstSeenAt: Time(),
      lastSeenAt: Time(),
    }),
  ),
});
export type CleanupStatusView = Static<typeof CleanupStatusView>;
