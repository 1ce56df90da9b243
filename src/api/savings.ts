/**
 * What cleanup saved, as the API answers it (`GET /api/v1/cleanup/report`) and the CLI reads it
 * (`tend cleanup report`): resource-hours freed by deletions and pauses, per day, project and
 * environment, with the method that estimated them and, when the server has prices, money.
 */
import { Type, type Static } from 'typebox';

const Time = () => Type.String({ format: 'date-time' });
const Nullable = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);

/** What one figure freed: hours an environment was away, its requests × those hours, and their price. */
export const FreedView = Type.Object({
  environmentHours: Type.Number({
    description: 'Hours environments were deleted or paused (each counts 1: the weight).',
  }),
  cpuHours: Type.Number({ description: 'CPU core-hours: the CPU its pods requested × the hours freed.' }),
  gibHours: Type.Number({ description: 'GiB-hours: the memory its pods requested × the hours freed.' }),
  cost: Nullable(
    Type.Number({
      description: 'cpuHours × price per CPU-hour + gibHours × price per GiB-hour; null without prices.',
    }),
  ),
});
export type FreedView = Static<typeof FreedView>;

export const SavingsAction = Type.Union([Type.Literal('delete'), Type.Literal('pause')]);
export type SavingsAction = Static<typeof SavingsAction>;

export const SavingsReport = Type.Object({
  serverTime: Time(),
  /** The window: from `since` to `serverTime`. */
  since: Time(),
  /** How the figures are estimated, in a sentence. */
  method: Type.String(),
  prices: Type.Object({ cpuHour: Nullable(Type.Number()), gibHour: Nullable(Type.Number()) }),
  total: FreedView,
  byAction: Type.Object({ delete: FreedView, pause: FreedView }),
  projects: Type.Array(
    Type.Object({ project: Type.String(), delete: FreedView, pause: FreedView, total: FreedView }),
  ),
  /** Per UTC day, project and action (only the days that freed something). */
  days: Type.Array(
    Type.Intersect([
      Type.Object({ day: Type.String(), project: Type.String(), action: SavingsAction }),
      FreedView,
    ]),
  ),
  /** Per environment and action, most CPU-hours first (at most 200). */
  environments: Type.Array(
    Type.Intersect([
      Type.Object({
        environmentId: Type.String(),
        project: Type.String(),
        environment: Type.String(),
        namespace: Type.String(),
        action: SavingsAction,
        /** `requests`: its pods' requests before the deletion or pause; `weight`: none known, counted as 1 environment. */
        basis: Type.Union([Type.Literal('requests'), Type.Literal('weight')]),
        cpuMillicores: Type.Integer(),
        memoryBytes: Type.Number(),
        /** Still deleted or paused now. */
        ongoing: Type.Boolean(),
      }),
      FreedView,
    ]),
  ),
  environmentsTruncated: Type.Boolean(),
});
export type SavingsReport = Static<typeof SavingsReport>;

export const savingsMethod =
  'freed = what the namespace’s running pods requested (CPU, memory) before its deletion or pause × the hours since, ' +
  'until the environment came back (redeployed, restored, resumed) or now; a namespace whose pods requested nothing known ' +
  'counts by weight (1 environment-hour per hour, no CPU or memory); a namespace held by several records counts once';
