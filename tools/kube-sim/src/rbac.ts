/**
 * Who asks and what they may do: authentication by bearer token and authorization as the API
 * server's RBAC authorizer decides. The simulator's own token is a cluster administrator (group
 * `system:masters`: every request allowed). A ServiceAccount gets tokens through the TokenRequest
 * API (`POST …/serviceaccounts/<name>/token`, what `kubectl create token` and the kubelet use);
 * such a token authenticates as `system:serviceaccount:<namespace>:<name>` (groups
 * `system:serviceaccounts`, `system:serviceaccounts:<namespace>`, `system:authenticated`) while
 * it has not expired and the ServiceAccount it was issued for (same uid) exists, and may do what
 * the Roles and ClusterRoles bound to it allow: ClusterRoleBindings everywhere, RoleBindings in
 * their namespace. Discovery (`/api`, `/apis`, `/version`, `/openapi`) is open to every
 * authenticated user, as the `system:discovery` binding makes it on a real cluster.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ResourceType } from './resources.js';
import { resourceByKey } from './resources.js';
import type { Store } from './store.js';
import { ApiError, type KObject, type StatusCause } from './types.js';

export interface User {
  name: string;
  groups: string[];
}

/** What a request asks to do, as the authorizer sees it. */
export interface Attributes {
  verb: string;
  rt: ResourceType;
  subresource?: string;
  /** The namespace of the request; for a Namespace object, its own name (as on a real cluster). */
  namespace?: string;
  name?: string;
}

interface Rule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

interface IssuedToken {
  namespace: string;
  name: string;
  uid: string;
  expiresAt: number;
}

const ADMIN_GROUP = 'system:masters';
const RBAC_GROUP = 'rbac.authorization.k8s.io';
/** Verbs the authorizer only checks against a rule's resourceNames when a name is known. */
const UNNAMED_VERBS = new Set(['list', 'watch', 'create', 'deletecollection']);

/** The user a verified client certificate names: its subject's CN, and each O as a group. */
function certificateUser(socket: TLSSocket): User | undefined {
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return undefined;
  const subject = socket.getPeerCertificate().subject as
    Record<string, string | string[] | undefined> | undefined;
  const name = subject?.CN;
  if (typeof name !== 'string' || name === '') return undefined;
  const groups = subject?.O === undefined ? [] : ([] as string[]).concat(subject.O);
  return { name, groups: [...new Set([...groups, 'system:authenticated'])] };
}

export class Authenticator {
  private readonly issued = new Map<string, IssuedToken>();

  constructor(
    private readonly adminToken: string,
    private readonly store: Store,
    /** Tokens given at start and who they are (KubeSimOptions.users). */
    private readonly users: Record<string, { name: string; groups?: string[] }> = {},
  ) {}

  /**
   * The user behind a request's client certificate (one the simulator's CA signed) or its bearer
   * token, or undefined (401). The certificate is looked at first, as the API server's union of
   * authenticators does.
   */
  authenticate(req: IncomingMessage): User | undefined {
    const certified = certificateUser(req.socket as TLSSocket);
    if (certified) return certified;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!match) return undefined;
    const token = match[1]!;
    if (token === this.adminToken) {
      return { name: 'kube-sim-admin', groups: [ADMIN_GROUP, 'system:authenticated'] };
    }
    const given = Object.hasOwn(this.users, token) ? this.users[token] : undefined;
    if (given) {
      const groups = [...(given.groups ?? []), 'system:authenticated'];
      return { name: given.name, groups: [...new Set(groups)] };
    }
    const issued = this.issued.get(token);
    if (!issued) return undefined;
    const account = this.store.get(resourceByKey('serviceaccounts'), issued.namespace, issued.name);
    if (Date.now() > issued.expiresAt || account?.metadata.uid !== issued.uid) {
      this.issued.delete(token);
      return undefined;
    }
    return {
      name: `system:serviceaccount:${issued.namespace}:${issued.name}`,
      groups: [
        'system:serviceaccounts',
        `system:serviceaccounts:${issued.namespace}`,
        'system:authenticated',
      ],
    };
  }

  /**
   * `POST …/serviceaccounts/<name>/token`: a TokenRequest answered with a new token for that
   * ServiceAccount (`spec.expirationSeconds`, default an hour, at least 10 minutes).
   */
  tokenRequest(account: KObject, body: unknown): Record<string, unknown> {
    const spec = (body as { spec?: { expirationSeconds?: unknown; audiences?: unknown } } | undefined)?.spec;
    const asked = spec?.expirationSeconds;
    if (asked !== undefined && (typeof asked !== 'number' || !Number.isInteger(asked) || asked < 600)) {
      throw invalidTokenRequest(account.metadata.name!, [
        { field: 'spec.expirationSeconds', message: 'may not specify a duration less than 10 minutes' },
      ]);
    }
    const seconds = (asked as number | undefined) ?? 3600;
    const token = `kube-sim-sa.${randomBytes(24).toString('base64url')}`;
    const expiresAt = Date.now() + seconds * 1000;
    this.issued.set(token, {
      namespace: account.metadata.namespace!,
      name: account.metadata.name!,
      uid: account.metadata.uid!,
      expiresAt,
    });
    return {
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name: account.metadata.name, namespace: account.metadata.namespace },
      spec: { audiences: Array.isArray(spec?.audiences) ? spec.audiences : [], expirationSeconds: seconds },
      status: { token, expirationTimestamp: new Date(expiresAt).toISOString().replace(/\.\d+Z$/, 'Z') },
    };
  }
}

function invalidTokenRequest(name: string, causes: StatusCause[]): ApiError {
  return new ApiError(
    422,
    'Invalid',
    `TokenRequest.authentication.k8s.io "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
    { name, group: 'authentication.k8s.io', kind: 'TokenRequest', causes },
  );
}

/** Whether RBAC allows the request (the administrator: always). */
export function authorize(store: Store, user: User, attrs: Attributes): boolean {
  if (user.groups.includes(ADMIN_GROUP)) return true;
  const rules = (roleKind: string, roleName: string, namespace: string): Rule[] => {
    const role =
      roleKind === 'ClusterRole'
        ? store.get(resourceByKey(`clusterroles.${RBAC_GROUP}`), '', roleName)
        : store.get(resourceByKey(`roles.${RBAC_GROUP}`), namespace, roleName);
    return ((role?.['rules'] as Rule[] | undefined) ?? []).filter((r) => typeof r === 'object' && r !== null);
  };
  const bound = (binding: KObject) =>
    ((binding['subjects'] as Subject[] | undefined) ?? []).some((s) => subjectMatches(s, user));
  for (const binding of store.list(resourceByKey(`clusterrolebindings.${RBAC_GROUP}`)).items) {
    const ref = binding.obj['roleRef'] as { kind?: string; name?: string } | undefined;
    if (!bound(binding.obj) || ref?.kind !== 'ClusterRole' || !ref.name) continue;
    if (rules('ClusterRole', ref.name, '').some((r) => ruleAllows(r, attrs))) return true;
  }
  if (attrs.namespace) {
    const bindings = store.list(resourceByKey(`rolebindings.${RBAC_GROUP}`), { namespace: attrs.namespace });
    for (const binding of bindings.items) {
      const ref = binding.obj['roleRef'] as { kind?: string; name?: string } | undefined;
      if (!bound(binding.obj) || !ref?.name || (ref.kind !== 'ClusterRole' && ref.kind !== 'Role')) continue;
      if (rules(ref.kind, ref.name, attrs.namespace).some((r) => ruleAllows(r, attrs))) return true;
    }
  }
  return false;
}

function subjectMatches(subject: Subject, user: User): boolean {
  if (subject.kind === 'ServiceAccount') {
    return user.name === `system:serviceaccount:${subject.namespace}:${subject.name}`;
  }
  if (subject.kind === 'User') return user.name === subject.name;
  if (subject.kind === 'Group') return subject.name !== undefined && user.groups.includes(subject.name);
  return false;
}

function ruleAllows(rule: Rule, attrs: Attributes): boolean {
  const has = (list: string[] | undefined, value: string) =>
    Array.isArray(list) && (list.includes('*') || list.includes(value));
  if (!has(rule.verbs, attrs.verb) || !has(rule.apiGroups, attrs.rt.group)) return false;
  const resources = rule.resources ?? [];
  const wanted = attrs.subresource ? `${attrs.rt.plural}/${attrs.subresource}` : attrs.rt.plural;
  const resourceOk =
    resources.includes('*') ||
    resources.includes(wanted) ||
    (attrs.subresource !== undefined && resources.includes(`*/${attrs.subresource}`));
  if (!resourceOk) return false;
  const names = rule.resourceNames ?? [];
  if (names.length === 0) return true;
  return !UNNAMED_VERBS.has(attrs.verb) && attrs.name !== undefined && names.includes(attrs.name);
}

/** The 403 a real API server answers, in its words. */
export function forbidden(user: User, attrs: Attributes): ApiError {
  const resource = attrs.subresource ? `${attrs.rt.plural}/${attrs.subresource}` : attrs.rt.plural;
  const what = attrs.name ? `${attrs.rt.plural} "${attrs.name}"` : attrs.rt.plural;
  const group = attrs.rt.group ? `${attrs.rt.plural}.${attrs.rt.group}` : attrs.rt.plural;
  const subject = attrs.name ? (attrs.rt.group ? `${group} "${attrs.name}"` : what) : group;
  const scope =
    attrs.namespace && attrs.rt.namespaced ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
  return new ApiError(
    403,
    'Forbidden',
    `${subject} is forbidden: User "${user.name}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.rt.group}" ${scope}`,
    { ...(attrs.name ? { name: attrs.name } : {}), group: attrs.rt.group, kind: attrs.rt.plural },
  );
}

/** Checks of Role, ClusterRole, RoleBinding and ClusterRoleBinding objects (422 causes). */
export function rbacProblems(rt: ResourceType, obj: KObject, old?: KObject): StatusCause[] {
  const causes: StatusCause[] = [];
  if (rt.kind === 'Role' || rt.kind === 'ClusterRole') {
    const rules = obj['rules'];
    if (rules !== undefined && !Array.isArray(rules)) {
      causes.push({ field: 'rules', message: 'Invalid value: must be a list' });
    }
    ((Array.isArray(rules) ? rules : []) as Rule[]).forEach((rule, i) => {
      if (!Array.isArray(rule.verbs) || rule.verbs.length === 0) {
        causes.push({
          reason: 'FieldValueRequired',
          field: `rules[${i}].verbs`,
          message: 'Required value: verbs must contain at least one value',
        });
      }
      const nonResource = (rule as { nonResourceURLs?: unknown }).nonResourceURLs;
      if (nonResource === undefined) {
        if (!Array.isArray(rule.apiGroups) || rule.apiGroups.length === 0) {
          causes.push({
            reason: 'FieldValueRequired',
            field: `rules[${i}].apiGroups`,
            message: 'Required value: resource rules must supply at least one api group',
          });
        }
        if (!Array.isArray(rule.resources) || rule.resources.length === 0) {
          causes.push({
            reason: 'FieldValueRequired',
            field: `rules[${i}].resources`,
            message: 'Required value: resource rules must supply at least one resource',
          });
        }
      } else if (rt.kind === 'Role') {
        causes.push({
          field: `rules[${i}].nonResourceURLs`,
          message: 'Invalid value: namespaced rules cannot apply to non-resource URLs',
        });
      }
    });
  }
  if (rt.kind === 'RoleBinding' || rt.kind === 'ClusterRoleBinding') {
    const ref = obj['roleRef'] as { apiGroup?: string; kind?: string; name?: string } | undefined;
    const kinds = rt.kind === 'RoleBinding' ? ['Role', 'ClusterRole'] : ['ClusterRole'];
    if (!ref || ref.apiGroup !== RBAC_GROUP || !kinds.includes(ref.kind ?? '') || !ref.name) {
      causes.push({
        field: 'roleRef',
        message: `Invalid value: roleRef must name a ${kinds.join(' or ')} of apiGroup ${RBAC_GROUP}`,
      });
    }
    const oldRef = old?.['roleRef'];
    if (oldRef !== undefined && JSON.stringify(oldRef) !== JSON.stringify(ref)) {
      causes.push({ field: 'roleRef', message: 'Invalid value: cannot change roleRef' });
    }
    ((obj['subjects'] as Subject[] | undefined) ?? []).forEach((s, i) => {
      if (!['ServiceAccount', 'User', 'Group'].includes(s.kind ?? '') || !s.name) {
        causes.push({
          field: `subjects[${i}]`,
          message: 'Invalid value: a subject needs a kind (ServiceAccount, User, Group) and a name',
        });
      } else if (s.kind === 'ServiceAccount' && !s.namespace && rt.kind === 'ClusterRoleBinding') {
        causes.push({
          reason: 'FieldValueRequired',
          field: `subjects[${i}].namespace`,
          message: 'Required value',
        });
      }
    });
  }
  return causes;
}
