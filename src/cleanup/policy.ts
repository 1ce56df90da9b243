/**
 * The cleanup policy vocabulary, written once: durations (`30m`, `8h`, `3d`, at most 365 days),
 * the working-hours schedule, and the policy an environment carries — as tend.yml writes it
 * (`CleanupConfigSchema`: `action` optional) and as events and the server carry it
 * (`CleanupPolicy`: `action` filled in). Every other module derives its types from these schemas.
 */
import { Type, type Static } from 'typebox';
import { Format } from 'typebox/format';
import { checkTimeZone } from './time-zone.js';

const unitMs = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The longest wait a policy (or keep-alive, plan window, …) may name: bounded so that dates stay dates. */
export const maxDurationMs = 365 * unitMs.d;

/** `30m`, `8h`, `3d`: a whole number and a unit (policy durations have no seconds). */
export const policyDurationPattern = '^[0-9]{1,9}[mhd]$';

/**
 * `45s`, `30m`, `8h`, `3d` in milliseconds, or undefined when it is not one or exceeds 365 days
 * (so no caller can compute an invalid date from it).
 */
export function parseDuration(value: string): number | undefined {
  const m = /^(\d{1,9})([smhd])$/.exec(value);
  if (!m) return undefined;
  const ms = Number(m[1]) * unitMs[m[2] as keyof typeof unitMs];
  return ms <= maxDurationMs ? ms : undefined;
}

/** The format that bounds a policy duration to 365 days, beyond what its pattern can say. */
export const policyDurationFormat = 'tend-policy-duration';
if (!Format.Has(policyDurationFormat)) {
  Format.Set(policyDurationFormat, (value) => parseDuration(value) !== undefined);
}

/** An IANA time-zone name as the platform's database spells it (checked through Intl). */
export const timeZoneFormat = 'tend-time-zone';
if (!Format.Has(timeZoneFormat)) {
  Format.Set(timeZoneFormat, (value) => checkTimeZone(value).valid);
}

/** A hint for a value a format refused: the canonical spelling of a time zone written in another case. */
export function formatSuggestion(format: unknown, value: unknown): string | undefined {
  if (format !== timeZoneFormat || typeof value !== 'string') return undefined;
  return checkTimeZone(value).suggestion;
}

/**
 * How a duration is asked for, in tend.yml's errors and the command line's (`--for`, `--within`):
 * "a duration of at most 365 days: a whole number followed by m, h or d (e.g. 30m, 8h, 3d)".
 */
export function durationWording(range = 'of at most 365 days'): string {
  return `a duration ${range}: a whole number followed by m, h or d (e.g. 30m, 8h, 3d)`;
}

const durationMessage = durationWording();

/** A policy duration; `description` says what it is for (tend.yml's JSON Schema shows it). */
export const PolicyDuration = (description?: string) =>
  Type.String({
    pattern: policyDurationPattern,
    format: policyDurationFormat,
    maxLength: 10,
    patternErrorMessage: durationMessage,
    ...(description ? { description } : {}),
  });

/** `HH:MM`, 24-hour. */
const clockPattern = '^([01][0-9]|2[0-3]):[0-5][0-9]$';
const clockMessage = 'a local time HH:MM, 24-hour (e.g. 08:00, 20:30)';

export const Weekday = Type.Union([
  Type.Literal('mon'),
  Type.Literal('tue'),
  Type.Literal('wed'),
  Type.Literal('thu'),
  Type.Literal('fri'),
  Type.Literal('sat'),
  Type.Literal('sun'),
]);

/** Working hours: awake from wakeAt to sleepAt on the weekdays, in an IANA time zone. */
export const CleanupSchedule = Type.Object(
  {
    sleepAt: Type.String({
      pattern: clockPattern,
      maxLength: 5,
      patternErrorMessage: clockMessage,
      description: 'Local time (HH:MM, 24-hour) the environment goes to sleep (is paused).',
    }),
    wakeAt: Type.String({
      pattern: clockPattern,
      maxLength: 5,
      patternErrorMessage: clockMessage,
      description: 'Local time (HH:MM, 24-hour) the environment wakes up (is resumed).',
    }),
    weekdays: Type.Array(Weekday, {
      minItems: 1,
      maxItems: 7,
      uniqueItems: true,
      description: 'The days it wakes up: mon, tue, wed, thu, fri, sat, sun.',
    }),
    timeZone: Type.String({
      minLength: 1,
      maxLength: 64,
      format: timeZoneFormat,
      patternErrorMessage: 'an IANA time zone name such as Europe/Berlin or America/New_York',
      description: 'An IANA time zone name, e.g. Europe/Berlin.',
    }),
  },
  {
    additionalProperties: false,
    description: 'Working hours: asleep (paused) outside them, in the time zone given.',
  },
);
export type CleanupSchedule = Static<typeof CleanupSchedule>;

/** What a policy does to an idle environment. */
const policyAction = (options: { default?: 'delete' } = {}) =>
  Type.Union([Type.Literal('delete'), Type.Literal('pause')], {
    description: 'What cleanup does: delete the namespace (default) or pause its workloads.',
    ...options,
  });
export const PolicyAction = policyAction();
export type PolicyAction = Static<typeof PolicyAction>;

const policyFields = {
  afterInactivity: PolicyDuration('Clean the environment up after this long without activity.'),
  warnBefore: Type.Optional(
    PolicyDuration(
      'Warn this long before the action: the plan, the dashboard, tend status, every tend command in the environment and the cleanup.warning webhooks say so (default 1h).',
    ),
  ),
  afterClose: Type.Optional(
    PolicyDuration(
      'With pullRequest: the environment is due this long after its pull request was closed or merged (default 0m: at once), through every safety check.',
    ),
  ),
  schedule: Type.Optional(CleanupSchedule),
  archive: Type.Optional(
    Type.Boolean({
      description:
        "Archive the environment before deleting it, so that `tend restore` can bring it back within the server's --archive-retention (default true); false for environments that hold nothing worth keeping.",
    }),
  ),
  readOnlyIsActivity: Type.Optional(
    Type.Boolean({
      description:
        'Count the start of a read-only command (tend status, tend logs) as activity, as tend did before (default false: a dashboard or script polling tend status does not keep the environment).',
    }),
  ),
};

/** `environments[].cleanup` as tend.yml writes it. */
export const CleanupConfigSchema = Type.Object(
  { ...policyFields, action: Type.Optional(policyAction({ default: 'delete' })) },
  { additionalProperties: false, description: 'Automatic environment cleanup policy.' },
);

/** The policy as events and the server carry it: the action filled in. */
export const CleanupPolicy = Type.Object(
  { ...policyFields, action: PolicyAction },
  { additionalProperties: false, description: 'Automatic environment cleanup policy.' },
);
export type CleanupPolicy = Static<typeof CleanupPolicy>;
