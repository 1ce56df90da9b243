/**
 * The cleanup pieces several pages show: a decision of the last planning pass (the kind badge,
 * warned inside its warning period), the table of cleanup jobs, and targets by the names people
 * know. Every name is escaped by `html`.
 */
import type { JobView } from '../../../cleanup/protocol.js';
import type { CleanupDecisionRow } from '../../db/schema.js';
import { when } from './elements.js';
import { html, type Html } from './html.js';

/** One decision, as the pages show it. */
export interface DecisionItem {
  kind: string;
  reason: string | null;
  action: string;
  environmentId: string;
  project: string;
  environment: string;
  namespace: string;
  targetKey: string;
  dueAt: string;
  sentence: string;
  jobId: string | null;
  /** When the warning period starts ("will be deleted at …"), for scheduled decisions. */
  warnAt: string | null;
}

export function decisionItem(r: CleanupDecisionRow): DecisionItem {
  return {
    kind: r.kind,
    reason: r.reason_code,
    action: r.action,
    environmentId: r.environment_id,
    project: r.project,
    environment: r.environment,
    namespace: r.namespace_name,
    targetKey: r.target_key,
    dueAt: r.due_at,
    sentence: r.sentence,
    jobId: r.job_id,
    warnAt: r.warn_at,
  };
}

/**
 * Targets by the names people know (a cluster's kubeconfig context or API server), never the
 * kube-system uid of the target key; a target no name is known for shows as "unnamed target".
 */
export type TargetNames = ReadonlyMap<string, string>;

export function targetName(key: string, names: TargetNames): string {
  return names.get(key) ?? (key.startsWith('local/') ? 'this host' : 'unnamed target');
}

/** A scheduled decision inside its warning period (warnBefore). */
function warned(d: { kind: string; warnAt?: string | null }, now: Date): boolean {
  return d.kind === 'scheduled' && d.warnAt != null && d.warnAt <= now.toISOString();
}

export function kindBadge(
  d: { kind: string; reason: string | null; warnAt?: string | null },
  now?: Date,
): Html {
  if (now && warned(d, now)) {
    return html`<span
      class="badge kind-due"
      title="inside its warning period: \`tend keep-alive\` to postpone"
      >warning</span
    >`;
  }
  return html`<span class="badge kind-${d.kind}"
    >${d.kind === 'blocked' ? `blocked: ${d.reason ?? '?'}` : d.kind}</span
  >`;
}

export function jobsTable(jobs: JobView[], now: Date, id: string, names: TargetNames = new Map()): Html {
  return html`<table id="${id}">
    <thead>
      <tr>
        <th>Planned</th>
        <th>Environment</th>
        <th>Namespace</th>
        <th>Action</th>
        <th>State</th>
        <th>Outcome</th>
        <th>By</th>
      </tr>
    </thead>
    <tbody>
      ${
        jobs.length === 0
          ? html`<tr>
              <td colspan="7" class="muted">No cleanup jobs yet.</td>
            </tr>`
          : jobs.map(
              (j) =>
                html`<tr data-job-id="${j.id}">
                  <td>${when(j.plannedAt, now)}</td>
                  <td>
                    <a href="/environments/${encodeURIComponent(j.environmentId)}"
                      >${j.project} / ${j.environment}</a
                    >
                  </td>
                  <td>${j.namespaceName} <span class="muted">${targetName(j.targetKey, names)}</span></td>
                  <td>${j.action}</td>
                  <td><span class="badge job-${j.state}">${j.state}</span></td>
                  <td>
                    ${j.message ?? j.reason}${j.attempts > 1 ? html` <span class="muted">(${j.attempts} attempts)</span>` : ''}
                  </td>
                  <td>
                    ${
                      j.action === 'restore'
                        ? `${j.actor ?? '?'} (restore)`
                        : j.trigger === 'now'
                          ? `${j.actor ?? '?'} (clean up now)`
                          : (j.actor ?? 'planner')
                    }
                  </td>
                </tr>`,
            )
      }
    </tbody>
  </table>`;
}
