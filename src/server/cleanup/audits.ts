/**
 * The audit entries of cleanup jobs and decisions, written alike by the job queue, the planning
 * pass and clean up now: what happened to which namespace of which environment, and why.
 */
import type { AuditInput } from '../db/repositories/audit.js';
import type { CleanupJobRow } from '../db/schema.js';
import type { Decision } from './planner/types.js';

export function jobAudit(
  job: CleanupJobRow,
  action: string,
  actor: string,
  message: string,
  extra: Record<string, unknown> = {},
): AuditInput {
  return {
    actor,
    action,
    environmentId: job.environment_id,
    detail: {
      project: job.project,
      environment: job.environment,
      namespace: job.namespace_name,
      targetKey: job.target_key,
      jobId: job.id,
      cleanupAction: job.action,
      message,
      ...extra,
    },
  };
}

export function leaseExpiredAudit(job: CleanupJobRow, claimedBy: string | null): AuditInput {
  return jobAudit(
    job,
    'cleanup-lease-expired',
    'planner',
    `the lease of ${job.lease_owner ?? 'its executor'} expired mid-job; the job returns to planned`,
    claimedBy ? { claimedBy } : {},
  );
}

export function decisionAudit(d: Decision, action: string, extra: Record<string, unknown> = {}): AuditInput {
  return {
    actor: 'planner',
    action,
    environmentId: d.environmentId,
    detail: {
      project: d.project,
      environment: d.environment,
      namespace: d.namespaceName,
      targetKey: d.targetKey,
      cleanupAction: d.action,
      dueAt: new Date(d.dueAt).toISOString(),
      message: d.sentence,
      ...extra,
    },
  };
}
