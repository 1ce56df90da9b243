/** Server-side printing (`Accept: ...;as=Table`), as kubectl asks for it in `kubectl get`. */
import type { ResourceType } from './resources.js';
import type { Stored } from './store.js';
import type { KObject } from './types.js';

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority: number;
  cell: (o: KObject) => unknown;
}

export function age(ts: string | undefined): string {
  if (!ts) return '<unknown>';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

function podStatus(o: KObject): string {
  if (o.metadata.deletionTimestamp) return 'Terminating';
  const st = o.status ?? {};
  for (const c of st.containerStatuses ?? []) {
    if (c.state?.waiting?.reason) return c.state.waiting.reason;
    if (c.state?.terminated?.reason && st.phase !== 'Succeeded' && st.phase !== 'Failed')
      return c.state.terminated.reason;
  }
  if (st.phase === 'Succeeded') return 'Completed';
  if (st.phase === 'Failed') {
    const t = (st.containerStatuses ?? []).find(
      (c: { state?: { terminated?: { reason?: string } } }) => c.state?.terminated,
    );
    return t?.state?.terminated?.reason ?? 'Error';
  }
  return st.phase ?? 'Pending';
}

const nameCol: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  priority: 0,
  cell: (o) => o.metadata.name,
};
const ageCol: Column = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  priority: 0,
  cell: (o) => age(o.metadata.creationTimestamp),
};

function col(name: string, cell: (o: KObject) => unknown, type = 'string', priority = 0): Column {
  return { name, type, description: name, priority, cell };
}

const COLUMNS: Record<string, Column[]> = {
  namespaces: [nameCol, col('Status', (o) => o.status?.phase ?? ''), ageCol],
  pods: [
    nameCol,
    col('Ready', (o) => {
      const cs = (o.status?.containerStatuses ?? []) as { ready?: boolean }[];
      const total = (o.spec?.containers ?? []).length;
      return `${cs.filter((c) => c.ready).length}/${total}`;
    }),
    col('Status', podStatus),
    col(
      'Restarts',
      (o) =>
        ((o.status?.containerStatuses ?? []) as { restartCount?: number }[]).reduce(
          (a, c) => a + (c.restartCount ?? 0),
          0,
        ),
      'integer',
    ),
    ageCol,
    col('IP', (o) => o.status?.podIP ?? '<none>', 'string', 1),
    col('Node', (o) => o.spec?.nodeName ?? '<none>', 'string', 1),
  ],
  'deployments.apps': [
    nameCol,
    col('Ready', (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 0}`),
    col('Up-to-date', (o) => o.status?.updatedReplicas ?? 0, 'integer'),
    col('Available', (o) => o.status?.availableReplicas ?? 0, 'integer'),
    ageCol,
  ],
  'replicasets.apps': [
    nameCol,
    col('Desired', (o) => o.spec?.replicas ?? 0, 'integer'),
    col('Current', (o) => o.status?.replicas ?? 0, 'integer'),
    col('Ready', (o) => o.status?.readyReplicas ?? 0, 'integer'),
    ageCol,
  ],
  'statefulsets.apps': [
    nameCol,
    col('Ready', (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 0}`),
    ageCol,
  ],
  'daemonsets.apps': [
    nameCol,
    col('Desired', (o) => o.status?.desiredNumberScheduled ?? 0, 'integer'),
    col('Current', (o) => o.status?.currentNumberScheduled ?? 0, 'integer'),
    col('Ready', (o) => o.status?.numberReady ?? 0, 'integer'),
    col('Up-to-date', (o) => o.status?.updatedNumberScheduled ?? 0, 'integer'),
    col('Available', (o) => o.status?.numberAvailable ?? 0, 'integer'),
    ageCol,
  ],
  'jobs.batch': [
    nameCol,
    col('Status', (o) => {
      const c = ((o.status?.conditions ?? []) as { type: string; status: string }[]).find(
        (x) => x.status === 'True' && (x.type === 'Complete' || x.type === 'Failed'),
      );
      return c ? c.type : 'Running';
    }),
    col('Completions', (o) => `${o.status?.succeeded ?? 0}/${o.spec?.completions ?? 1}`),
    ageCol,
  ],
  services: [
    nameCol,
    col('Type', (o) => o.spec?.type ?? 'ClusterIP'),
    col('Cluster-IP', (o) => o.spec?.clusterIP ?? '<none>'),
    col('External-IP', () => '<none>'),
    col(
      'Port(s)',
      (o) =>
        ((o.spec?.ports ?? []) as { port: number; protocol?: string }[])
          .map((p) => `${p.port}/${p.protocol ?? 'TCP'}`)
          .join(',') || '<none>',
    ),
    ageCol,
  ],
  configmaps: [nameCol, col('Data', (o) => Object.keys((o.data as object) ?? {}).length, 'integer'), ageCol],
  secrets: [
    nameCol,
    col('Type', (o) => (o.type as string) ?? 'Opaque'),
    col('Data', (o) => Object.keys((o.data as object) ?? {}).length, 'integer'),
    ageCol,
  ],
  serviceaccounts: [nameCol, col('Secrets', () => 0, 'integer'), ageCol],
  events: [
    col('Last Seen', (o) => age((o.lastTimestamp as string) ?? o.metadata.creationTimestamp)),
    col('Type', (o) => o.type ?? ''),
    col('Reason', (o) => o.reason ?? ''),
    col('Object', (o) => {
      const io = o.involvedObject as { kind?: string; name?: string } | undefined;
      return io ? `${(io.kind ?? '').toLowerCase()}/${io.name ?? ''}` : '';
    }),
    col('Message', (o) => o.message ?? ''),
  ],
};

export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept);
}

function columnsFor(rt: ResourceType): Column[] {
  return COLUMNS[rt.key] ?? [nameCol, ageCol];
}

export function toTable(
  rt: ResourceType,
  items: Stored[],
  meta: Record<string, unknown>,
  withColumns = true,
): string {
  const cols = columnsFor(rt);
  const defs = cols.map(({ name, type, format, description, priority }) => ({
    name,
    type,
    format: format ?? '',
    description,
    priority,
  }));
  const rows = items.map(
    (s) => `{"cells":${JSON.stringify(cols.map((c) => c.cell(s.obj)))},"object":${s.json}}`,
  );
  return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":${JSON.stringify(meta)},"columnDefinitions":${withColumns ? JSON.stringify(defs) : 'null'},"rows":[${rows.join(',')}]}`;
}
