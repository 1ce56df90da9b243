/**
 * What cleanup saved, worked out from what the database keeps (`repositories/cleanup-savings.ts`
 * reads it): each done deletion or pause is a *spell* from when its job finished until the
 * environment came back — a new generation of the namespace (redeployed or restored), a done
 * resume job, a command that resumes at its start (`deploy`, `test`, `run`, `resume`), the
 * namespace going for another reason — or now. A spell frees what the namespace's running pods
 * requested before it (`namespace_requests`) for each of its hours; one with no requests known
 * counts by weight (an environment-hour an hour). Spells of one namespace (several records
 * holding it, a pause followed by a deletion) never overlap: each hour of a namespace counts once.
 */
import { savingsMethod, type FreedView, type SavingsAction, type SavingsReport } from '../../api/savings.js';
import type { SpellInput } from '../db/repositories/cleanup-savings.js';

export interface SavingsPrices {
  /** Money per CPU core-hour. */
  cpuHour?: number;
  /** Money per GiB-hour of memory. */
  gibHour?: number;
}

const hourMs = 3_600_000;
const dayMs = 86_400_000;
const gib = 2 ** 30;

const zero = (): Acc => ({ hours: 0, cpu: 0, gib: 0 });
interface Acc {
  hours: number;
  cpu: number;
  gib: number;
}

function add(a: Acc, hours: number, s: SpellInput): void {
  a.hours += hours;
  if (s.requests) {
    a.cpu += (hours * s.requests.cpuMillicores) / 1000;
    a.gib += (hours * s.requests.memoryBytes) / gib;
  }
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;

function view(a: Acc, prices: SavingsPrices): FreedView {
  const priced = prices.cpuHour !== undefined || prices.gibHour !== undefined;
  return {
    environmentHours: round(a.hours),
    cpuHours: round(a.cpu),
    gibHours: round(a.gib),
    cost: priced ? round(a.cpu * (prices.cpuHour ?? 0) + a.gib * (prices.gibHour ?? 0)) : null,
  };
}

/** The report of `spells` within [since, now]. */
export function savingsReport(
  spells: SpellInput[],
  window: { since: Date; now: Date },
  prices: SavingsPrices,
  maxEnvironments = 200,
): SavingsReport {
  const since = window.since.getTime();
  const now = window.now.getTime();
  const days = new Map<string, Acc & { day: string; project: string; action: SavingsAction }>();
  const projects = new Map<string, { delete: Acc; pause: Acc }>();
  const environments = new Map<string, { s: SpellInput; acc: Acc; ongoing: boolean }>();
  const byAction = { delete: zero(), pause: zero() };
  const total = zero();
  // Each namespace's hours count once: spells in order of start, each from where the last ended.
  const coveredUntil = new Map<string, number>();
  const ordered = [...spells].sort((a, b) => a.start - b.start);
  for (const s of ordered) {
    const key = `${s.targetKey}\u0000${s.namespace}\u0000${s.uid ?? s.resourceId ?? s.environmentId}`;
    const end = Math.min(s.end ?? now, now);
    const from = Math.max(s.start, coveredUntil.get(key) ?? -Infinity);
    if (end <= from) continue;
    coveredUntil.set(key, end);
    const a = Math.max(from, since);
    if (end <= a) continue;
    const envKey = `${s.environmentId}\u0000${s.action}`;
    const env = environments.get(envKey) ?? { s, acc: zero(), ongoing: false };
    env.s = s;
    env.ongoing ||= s.end === undefined;
    environments.set(envKey, env);
    const project = projects.get(s.project) ?? { delete: zero(), pause: zero() };
    projects.set(s.project, project);
    // Split at UTC midnights: each day gets its own hours.
    for (let t = a; t < end;) {
      const next = Math.min(end, (Math.floor(t / dayMs) + 1) * dayMs);
      const hours = (next - t) / hourMs;
      const day = new Date(t).toISOString().slice(0, 10);
      const dayKey = `${day}\u0000${s.project}\u0000${s.action}`;
      const d = days.get(dayKey) ?? { day, project: s.project, action: s.action, ...zero() };
      days.set(dayKey, d);
      for (const acc of [d, env.acc, project[s.action], byAction[s.action], total]) add(acc, hours, s);
      t = next;
    }
  }
  const envRows = [...environments.values()]
    .sort((x, y) => y.acc.cpu - x.acc.cpu || y.acc.hours - x.acc.hours)
    .map(({ s, acc, ongoing }) => ({
      environmentId: s.environmentId,
      project: s.project,
      environment: s.environment,
      namespace: s.namespace,
      action: s.action,
      basis: s.requests ? ('requests' as const) : ('weight' as const),
      cpuMillicores: s.requests?.cpuMillicores ?? 0,
      memoryBytes: s.requests?.memoryBytes ?? 0,
      ongoing,
      ...view(acc, prices),
    }));
  return {
    serverTime: window.now.toISOString(),
    since: window.since.toISOString(),
    method: savingsMethod,
    prices: { cpuHour: prices.cpuHour ?? null, gibHour: prices.gibHour ?? null },
    total: view(total, prices),
    byAction: { delete: view(byAction.delete, prices), pause: view(byAction.pause, prices) },
    projects: [...projects.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([project, p]) => ({
        project,
        delete: view(p.delete, prices),
        pause: view(p.pause, prices),
        total: view(
          {
            hours: p.delete.hours + p.pause.hours,
            cpu: p.delete.cpu + p.pause.cpu,
            gib: p.delete.gib + p.pause.gib,
          },
          prices,
        ),
      })),
    days: [...days.values()]
      .sort(
        (x, y) =>
          x.day.localeCompare(y.day) ||
          x.project.localeCompare(y.project) ||
          x.action.localeCompare(y.action),
      )
      .map((d) => ({ day: d.day, project: d.project, action: d.action, ...view(d, prices) })),
    environments: envRows.slice(0, maxEnvironments),
    environmentsTruncated: envRows.length > maxEnvironments,
  };
}
