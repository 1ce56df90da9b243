/**
 * What the cleanup planner can decide about a namespace, as both programs name it: the kinds of
 * decision and the reason codes of a blocked one (docs/cleanup.md#reason-codes).
 */

export const decisionKinds = ['due', 'scheduled', 'dry-run', 'blocked'] as const;
export type DecisionKind = (typeof decisionKinds)[number];

export const blockReasons = [
  'not-owned',
  'system',
  'adopted',
  'protected-name',
  'protected',
  'kept-alive',
  'session-running',
  'held-elsewhere',
  'inventory-stale',
  'inventory-partial',
  'no-executor',
  'clock-disagrees',
  'breaker-open',
  'cap-reached',
  'halted',
  'paused',
] as const;
export type BlockReason = (typeof blockReasons)[number];
