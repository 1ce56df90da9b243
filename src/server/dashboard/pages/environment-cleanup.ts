/**
 * The Cleanup part of an environment's page: its decisions (one per recorded namespace), Resume
 * and "Clean up now" as the session may, and its recent cleanup jobs.
 */
import type { JobView } from '../../../cleanup/protocol.js';
import type { DashboardCleanupRepository } from '../../db/repositories/dashboard-cleanup.js';
import type { ServerServices } from '../../services.js';
import {
  decisionItem,
  jobsTable,
  kindBadge,
  type DecisionItem,
  type TargetNames,
} from '../common/cleanup-parts.js';
import { postForm, when, type PageSession } from '../common/elements.js';
import { html, type Html } from '../common/html.js';

/** The plan of one environment, its recent jobs and (for admins) "Clean up now". */
export function environmentCleanupSection(
  input: {
    environmentId: string;
    decisions: DecisionItem[];
    jobs: JobView[];
    canClean: boolean;
    /** Why "Clean up now" is missing ("Cleaning up now needs …"). */
    cleanNeeds: string;
    canResume: boolean;
    active: boolean;
    /** Paused by a pause job: a Resume button (the developer role and scope, like keep-alive). */
    paused: boolean;
    /** The environment's targets by name (from its resources). */
    targets?: TargetNames;
  },
  session: PageSession,
  now: Date,
): Html {
  return html`<h2>Cleanup</h2>
    <table id="plan" class="cards">
      <thead>
        <tr>
          <th>Namespace</th>
          <th>Decision</th>
          <th>Action</th>
          <th>Due</th>
          <th>Why</th>
        </tr>
      </thead>
      <tbody>
        ${
          input.decisions.length === 0
            ? html`<tr>
                <td colspan="5" class="muted">
                  No decision: the environment has no cleanup policy, or no planning pass has seen it yet.
                </td>
              </tr>`
            : input.decisions.map(
                (d) =>
                  html`<tr>
                    <td data-label="Namespace">${d.namespace}</td>
                    <td data-label="Decision">${kindBadge(d, now)}</td>
                    <td data-label="Action">${d.action}</td>
                    <td data-label="Due">${d.kind === 'blocked' ? '—' : when(d.dueAt, now)}</td>
                    <td data-label="Why">
                      ${d.sentence}${d.jobId ? html` <span class="muted">(job ${d.jobId})</span>` : ''}
                    </td>
                  </tr>`,
              )
        }
      </tbody>
    </table>
    <div class="actions">
      ${
        input.paused && input.canResume
          ? postForm(session, `/environments/${encodeURIComponent(input.environmentId)}/resume`, 'Resume')
          : ''
      }
      ${
        !input.active
          ? ''
          : input.canClean
            ? postForm(
                session,
                `/environments/${encodeURIComponent(input.environmentId)}/cleanup`,
                'Clean up now',
              )
            : html`<span class="muted">Cleaning up now ${input.cleanNeeds}.</span>`
      }
    </div>
    ${input.jobs.length > 0 ? jobsTable(input.jobs, now, 'environment-jobs', input.targets) : ''}`;
}

/** An environment's decisions (one per recorded namespace) and its recent cleanup jobs. */
export async function environmentCleanup(
  services: ServerServices,
  reads: DashboardCleanupRepository,
  environmentId: string,
) {
  const [decisions, jobs] = await Promise.all([
    reads.environmentDecisions(environmentId),
    services.cleanup.jobs.listJobs({ environmentId }, 10),
  ]);
  return { decisions: decisions.map(decisionItem), jobs: await services.cleanup.queue.jobHistory(jobs) };
}
