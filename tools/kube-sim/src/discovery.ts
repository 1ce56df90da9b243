/** Discovery documents: /version, /api, /apis, /api/v1, /apis/<group>/<version>. */
import { GROUP_VERSIONS, RESOURCES, VERBS } from './resources.js';

export function versionInfo(): Record<string, string> {
  return {
    major: '1',
    minor: '32',
    gitVersion: 'v1.32.0-kube-sim',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2025-01-01T00:00:00Z',
    goVersion: 'go1.23.0',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

export function apiGroupList(): Record<string, unknown> {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: GROUP_VERSIONS.filter((g) => g.group !== '').map((g) => ({
      name: g.group,
      versions: [{ groupVersion: `${g.group}/${g.version}`, version: g.version }],
      preferredVersion: { groupVersion: `${g.group}/${g.version}`, version: g.version },
    })),
  };
}

const SUB_VERBS: Record<string, string[]> = {
  status: ['get', 'patch', 'update'],
  scale: ['get', 'patch', 'update'],
  finalize: ['update'],
  token: ['create'],
  log: ['get'],
  exec: ['create', 'get'],
  attach: ['create', 'get'],
};

export function apiResourceList(group: string, version: string): Record<string, unknown> | undefined {
  if (!GROUP_VERSIONS.some((g) => g.group === group && g.version === version)) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const r of RESOURCES) {
    if (r.group !== group || r.version !== version) continue;
    resources.push({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.kind === 'Namespace' ? VERBS.filter((v) => v !== 'deletecollection') : VERBS,
      ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
      ...(r.categories.length ? { categories: r.categories } : {}),
    });
    for (const sub of r.subresources) {
      resources.push({
        name: `${r.plural}/${sub}`,
        singularName: '',
        namespaced: r.namespaced,
        ...(sub === 'scale'
          ? { group: 'autoscaling', version: 'v1', kind: 'Scale' }
          : sub === 'token'
            ? { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' }
            : { kind: sub === 'exec' || sub === 'attach' ? 'PodExecOptions' : r.kind }),
        verbs: SUB_VERBS[sub] ?? ['get'],
      });
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** `/openapi/v3`: the index of group-version documents. */
export function openapiV3Root(): Record<string, unknown> {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const g of GROUP_VERSIONS) {
    const p = gvPath(g.group, g.version);
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=kube-sim-1` };
  }
  return { paths };
}

/**
 * `/openapi/v3/<group-version>`: just enough for kubectl — a PATCH operation per resource with
 * its group-version-kind and the `fieldValidation` parameter, so kubectl leaves validation to
 * the server instead of downloading schemas. No component schemas are served.
 */
export function openapiV3GroupVersion(path: string): Record<string, unknown> | undefined {
  const g = GROUP_VERSIONS.find((x) => gvPath(x.group, x.version) === path);
  if (!g) return undefined;
  const paths: Record<string, unknown> = {};
  const params = ['dryRun', 'fieldManager', 'fieldValidation', 'force'].map((name) => ({
    name,
    in: 'query',
    schema: { type: name === 'force' ? 'boolean' : 'string', uniqueItems: true },
  }));
  for (const r of RESOURCES) {
    if (r.group !== g.group || r.version !== g.version) continue;
    const base = `/${path}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}/{name}`;
    paths[base] = {
      patch: {
        operationId: `patch${r.kind}`,
        parameters: params,
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes (kube-sim)', version: 'v1.32.0' },
    paths,
    components: { schemas: {} },
  };
}
