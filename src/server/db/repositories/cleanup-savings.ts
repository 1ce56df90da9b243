/**
 * What the savings report reads (`src/server/cleanup/savings.ts` works it out): the done
 * deletion and pause jobs, and for their environments what ends a spell — later generations of
 * the namespace, done resume jobs, commands that resume at their start — and what each
 * namespace requested before its job (`namespace_requests`). All on the reader connection.
 */
import type { Kysely } from 'kysely';
import type { SavingsAction } from '../../../api/savings.js';
import type { Database } from '../schema.js';
import type { VisibleProjects } from '../visible-projects.js';
import { inVisibleProjects } from '../visible-projects.js';
import { chunks } from '../bulk.js';

/** A done deletion or pause job, with what is needed to find its end and its value. */
export interface SpellInput {
  action: SavingsAction;
  environmentId: string;
  resourceId: string | null;
  project: string;
  environment: string;
  targetKey: string;
  namespace: string;
  uid: string | null;
  /** When the job finished: the spell's start. */
  start: number;
  /** The first of the events that end it (came back), or undefined: still away. */
  end: number | undefined;
  /** What its pods requested before it, or undefined (counted by weight). */
  requests: { cpuMillicores: number; memoryBytes: number } | undefined;
}

const time = (iso: string | null | undefined): number | undefined => (iso ? Date.parse(iso) : undefined);

/** The first of `times` after `start`, or undefined. */
function firstAfter(start: number, times: (number | undefined)[]): number | undefined {
  let first: number | undefined;
  for (const t of times) if (t !== undefined && t > start && (first === undefined || t < first)) first = t;
  return first;
}

export class CleanupSavingsRepository {
  constructor(private readonly reader: Kysely<Database>) {}

  /**
   * Every done deletion and pause (of the projects visible), with its end and requests; a
   * session of one of `resumingCommands` ends a spell when it starts.
   */
  async spells(
    resumingCommands: ReadonlySet<string>,
    visible: VisibleProjects = 'all',
  ): Promise<SpellInput[]> {
    let query = this.reader
      .selectFrom('cleanup_jobs')
      .select([
        'action',
        'environment_id',
        'resource_id',
        'project',
        'environment',
        'target_key',
        'namespace_name',
        'namespace_uid',
        'finished_at',
      ])
      .where('state', '=', 'done')
      .where('action', 'in', ['delete', 'pause'])
      .where('dry_run', '=', 0)
      .where('finished_at', 'is not', null);
    if (visible !== 'all') query = query.where(inVisibleProjects(visible));
    const jobs = await query.execute();
    if (jobs.length === 0) return [];
    const envIds = [...new Set(jobs.map((j) => j.environment_id))];
    const resources = new Map<
      string,
      {
        id: string;
        target_key: string;
        namespace_name: string;
        generation: number;
        first_seen_at: string;
        state: string;
        missing_since: string | null;
      }
    >();
    const byEnvironment = new Map<
      string,
      { id: string; target_key: string; namespace_name: string; generation: number; first_seen_at: string }[]
    >();
    const resumes = new Map<string, number[]>();
    for (const ids of chunks(envIds)) {
      const [rows, resumeJobs, sessions] = await Promise.all([
        this.reader
          .selectFrom('resources')
          .select([
            'id',
            'environment_id',
            'target_key',
            'namespace_name',
            'generation',
            'first_seen_at',
            'state',
            'missing_since',
          ])
          .where('environment_id', 'in', ids)
          .execute(),
        this.reader
          .selectFrom('cleanup_jobs')
          .select(['environment_id', 'finished_at'])
          .where('state', '=', 'done')
          .where('action', '=', 'resume')
          .where('environment_id', 'in', ids)
          .execute(),
        this.reader
          .selectFrom('sessions')
          .select(['environment_id', 'started_at'])
          .where('environment_id', 'in', ids)
          .where('command', 'in', [...resumingCommands])
          .where('started_at', 'is not', null)
          .execute(),
      ]);
      for (const r of rows) {
        resources.set(r.id, r);
        const list = byEnvironment.get(r.environment_id) ?? [];
        list.push(r);
        byEnvironment.set(r.environment_id, list);
      }
      for (const r of [
        ...resumeJobs.map((j) => ({ id: j.environment_id, at: j.finished_at })),
        ...sessions.map((s) => ({ id: s.environment_id!, at: s.started_at })),
      ]) {
        const at = time(r.at);
        if (at === undefined) continue;
        const list = resumes.get(r.id) ?? [];
        list.push(at);
        resumes.set(r.id, list);
      }
    }
    const requests = await this.requestHistory(
      jobs.map((j) => j.namespace_uid).filter((u): u is string => u !== null),
    );
    // A pause ends when the same namespace is deleted later.
    const deletedAt = new Map<string, number[]>();
    for (const j of jobs) {
      if (j.action !== 'delete' || !j.resource_id) continue;
      const list = deletedAt.get(j.resource_id) ?? [];
      list.push(Date.parse(j.finished_at!));
      deletedAt.set(j.resource_id, list);
    }
    return jobs.map((j) => {
      const start = Date.parse(j.finished_at!);
      const resource = j.resource_id ? resources.get(j.resource_id) : undefined;
      const later = resource
        ? (byEnvironment.get(j.environment_id) ?? [])
            .filter(
              (r) =>
                r.target_key === resource.target_key &&
                r.namespace_name === resource.namespace_name &&
                r.generation > resource.generation,
            )
            .map((r) => time(r.first_seen_at))
        : [];
      let end: number | undefined;
      if (j.action === 'delete') {
        // A namespace recorded as there again under the same generation was never gone.
        end = resource && resource.state !== 'missing' ? start : firstAfter(start, later);
      } else {
        end = firstAfter(start, [
          ...later,
          ...(resumes.get(j.environment_id) ?? []),
          ...(j.resource_id ? (deletedAt.get(j.resource_id) ?? []) : []),
          time(resource?.missing_since),
        ]);
      }
      const history = requests.get(`${j.target_key}\u0000${j.namespace_name}\u0000${j.namespace_uid}`) ?? [];
      const before = history.filter((h) => h.at <= start).at(-1);
      const known = before && (before.cpuMillicores > 0 || before.memoryBytes > 0);
      return {
        action: j.action as 'delete' | 'pause',
        environmentId: j.environment_id,
        resourceId: j.resource_id,
        project: j.project ?? '',
        environment: j.environment ?? '',
        targetKey: j.target_key ?? '',
        namespace: j.namespace_name ?? '',
        uid: j.namespace_uid,
        start,
        end,
        requests: known
          ? { cpuMillicores: before.cpuMillicores, memoryBytes: before.memoryBytes }
          : undefined,
      };
    });
  }

  /** Each namespace uid's request history, oldest first, keyed by target, name and uid. */
  private async requestHistory(uids: string[]) {
    const out = new Map<string, { at: number; cpuMillicores: number; memoryBytes: number }[]>();
    for (const list of chunks([...new Set(uids)])) {
      const rows = await this.reader
        .selectFrom('namespace_requests')
        .select(['target_key', 'namespace_name', 'uid', 'observed_at', 'cpu_millicores', 'memory_bytes'])
        .where('uid', 'in', list)
        .orderBy('observed_at')
        .execute();
      for (const r of rows) {
        const key = `${r.target_key}\u0000${r.namespace_name}\u0000${r.uid}`;
        const history = out.get(key) ?? [];
        history.push({
          at: Date.parse(r.observed_at),
          cpuMillicores: r.cpu_millicores,
          memoryBytes: Number(r.memory_bytes),
        });
        out.set(key, history);
      }
    }
    return out;
  }
}
