/**
 * The cleanup plan as the API answers it (`GET /api/v1/cleanup/plan`) and the CLI reads it
 * (`tend cleanup plan`, `tend status`, `tend envs <id>`, every command's warning line).
 */
import { Type, type Static } from '@sinclair/typebox';
import { blockReasons, decisionKinds } from '../cleanup/decisions.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const Time = () => Type.String({ format: 'date-time' });

export const PlanItemView = Type.Object({
  kind: Type.Union(decisionKinds.map((k) => Type.Literal(k))),
  reason: Type.Union([...blockReasons.map((r) => Type.Literal(r)), Type.Null()]),
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
