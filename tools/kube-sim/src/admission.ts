/**
 * Validating admission as the API server's ValidatingAdmissionPolicy plugin does it
 * (admissionregistration.k8s.io/v1): every create, update and delete that RBAC allowed — made
 * through the API by any user, the administrator included — is checked against each
 * ValidatingAdmissionPolicyBinding and the policy it names, after the object is built and
 * validated and before anything is stored (dry runs too). A binding applies when its policy's
 * `matchConstraints` and its own `matchResources` match the request (resource rules with
 * operations, scope and subresources, `excludeResourceRules`, `namespaceSelector`,
 * `objectSelector`, `resourceNames`) and every `matchConditions` expression is true. Its
 * `validations` are then evaluated in order with `object`, `oldObject`, `request`,
 * `namespaceObject`, `params` (always null: `paramKind` is not simulated) and the policy's
 * `variables`; the first false one refuses the request when the binding's `validationActions`
 * hold `Deny` (`Warn` and `Audit` are accepted and do nothing here). An expression that fails to
 * evaluate refuses it too unless the policy says `failurePolicy: Ignore`. The refusal is the real
 * one: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding
 * '<binding>' denied request: <message>`, with the validation's `reason` (default Invalid, 422;
 * Forbidden is 403). Writes of the simulated controllers are not admitted, and neither are
 * requests on the policies and bindings themselves, as on a real cluster.
 */
import { CelEvaluationError, compile, compileError, toCel } from './cel.js';
import type { User } from './rbac.js';
import type { ResourceType } from './resources.js';
import { NS, resourceByKey } from './resources.js';
import { matchesLabelSelectorObject } from './selectors.js';
import type { Store } from './store.js';
import { ApiError, type KObject, type StatusCause } from './types.js';

export const ADMISSION_GROUP = 'admissionregistration.k8s.io';
const POLICY = resourceByKey(`validatingadmissionpolicies.${ADMISSION_GROUP}`);
const BINDING = resourceByKey(`validatingadmissionpolicybindings.${ADMISSION_GROUP}`);

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE';

/** What a write asks, as admission sees it. */
export interface AdmissionRequest {
  operation: AdmissionOperation;
  rt: ResourceType;
  subresource?: string;
  /** The namespace of the object; for a Namespace, its own name (as the API server sets it). */
  namespace: string;
  name: string;
  /** The object as it would be stored (null for a delete). */
  object: KObject | null;
  /** The object as it is (null for a create). */
  oldObject: KObject | null;
  dryRun: boolean;
  user: User;
}

type Selector = Parameters<typeof matchesLabelSelectorObject>[0];

interface ResourceRule {
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  operations?: string[];
  scope?: string;
  resourceNames?: string[];
}

interface MatchResources {
  namespaceSelector?: Selector;
  objectSelector?: Selector;
  resourceRules?: ResourceRule[];
  excludeResourceRules?: ResourceRule[];
}

interface Validation {
  expression: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
}

interface PolicySpec {
  failurePolicy?: 'Fail' | 'Ignore';
  matchConstraints?: MatchResources;
  matchConditions?: { name: string; expression: string }[];
  variables?: { name: string; expression: string }[];
  validations?: Validation[];
  paramKind?: unknown;
}

interface BindingSpec {
  policyName?: string;
  validationActions?: string[];
  matchResources?: MatchResources;
  paramRef?: unknown;
}

const REASON_CODES: Record<string, number> = {
  Invalid: 422,
  Forbidden: 403,
  Unauthorized: 401,
  RequestEntityTooLarge: 413,
};

export class Admission {
  constructor(private readonly store: Store) {}

  /** Throws the refusal of the first binding whose policy denies the request. */
  check(req: AdmissionRequest): void {
    if (req.rt.group === ADMISSION_GROUP) return;
    const bindings = this.store.list(BINDING).items;
    if (bindings.length === 0) return;
    const namespaceObject =
      req.rt.namespaced && req.namespace ? (this.store.get(NS, '', req.namespace) ?? null) : null;
    for (const { obj: binding } of bindings) {
      const spec = (binding.spec ?? {}) as BindingSpec;
      const policy = spec.policyName ? this.store.get(POLICY, '', spec.policyName) : undefined;
      if (!policy) continue;
      const policySpec = (policy.spec ?? {}) as PolicySpec;
      if (!matches(policySpec.matchConstraints ?? {}, req, namespaceObject, true)) continue;
      if (spec.matchResources && !matches(spec.matchResources, req, namespaceObject, false)) continue;
      const denial = evaluate(policySpec, req, namespaceObject);
      if (!denial || !(spec.validationActions ?? []).includes('Deny')) continue;
      throw refusal(req, policy.metadata.name!, binding.metadata.name!, denial);
    }
  }
}

/** Why the policy denies the request (message and reason), or undefined when it admits it. */
function evaluate(
  spec: PolicySpec,
  req: AdmissionRequest,
  namespaceObject: KObject | null,
): { message: string; reason: string } | undefined {
  const failed = (expression: string, error: unknown) =>
    spec.failurePolicy === 'Ignore'
      ? undefined
      : {
          message: `expression '${expression}' resulted in error: ${(error as Error).message}`,
          reason: 'Invalid',
        };
  const variables = new Map<string, unknown>();
  const bindings = {
    object: toCel(req.object),
    oldObject: toCel(req.oldObject),
    namespaceObject: toCel(namespaceObject),
    request: toCel(requestOf(req)),
    params: null,
    variables,
  };
  const run = (expression: string) => compile(expression)(bindings as never);
  for (const condition of spec.matchConditions ?? []) {
    try {
      if (run(condition.expression) !== true) return undefined;
    } catch (e) {
      return failed(condition.expression, e);
    }
  }
  // Evaluated in order, each seeing the ones before it (the API server evaluates them lazily:
  // the same values).
  for (const variable of spec.variables ?? []) {
    try {
      variables.set(variable.name, run(variable.expression));
    } catch (e) {
      return failed(variable.expression, e);
    }
  }
  for (const validation of spec.validations ?? []) {
    let passed: unknown;
    try {
      passed = run(validation.expression);
    } catch (e) {
      return failed(validation.expression, e);
    }
    if (passed === true) continue;
    if (typeof passed !== 'boolean') {
      return failed(validation.expression, new CelEvaluationError(`expected a bool, got ${typeof passed}`));
    }
    let message = validation.message || `failed expression: ${validation.expression}`;
    if (validation.messageExpression) {
      try {
        const computed = run(validation.messageExpression);
        if (typeof computed === 'string' && computed.trim() !== '') message = computed;
      } catch {
        // As on a real cluster: the static message (or the default) stands.
      }
    }
    return { message, reason: validation.reason || 'Invalid' };
  }
  return undefined;
}

/** The `request` variable: the AdmissionRequest's fields a policy reads. */
function requestOf(req: AdmissionRequest): Record<string, unknown> {
  const kind = { group: req.rt.group, version: req.rt.version, kind: req.rt.kind };
  const resource = { group: req.rt.group, version: req.rt.version, resource: req.rt.plural };
  return {
    kind,
    resource,
    requestKind: kind,
    requestResource: resource,
    subResource: req.subresource ?? '',
    name: req.name,
    namespace: req.namespace,
    operation: req.operation,
    userInfo: { username: req.user.name, groups: req.user.groups },
    dryRun: req.dryRun,
  };
}

function matches(
  m: MatchResources,
  req: AdmissionRequest,
  namespaceObject: KObject | null,
  rulesRequired: boolean,
): boolean {
  const rules = m.resourceRules ?? [];
  if ((rules.length > 0 || rulesRequired) && !rules.some((r) => ruleMatches(r, req))) return false;
  if ((m.excludeResourceRules ?? []).some((r) => ruleMatches(r, req))) return false;
  if (m.namespaceSelector !== undefined) {
    // A Namespace is matched by its own labels; other cluster-scoped objects by any selector.
    const subject = req.rt.kind === 'Namespace' ? (req.object ?? req.oldObject) : namespaceObject;
    const clusterScoped = !req.rt.namespaced && req.rt.kind !== 'Namespace';
    if (!clusterScoped && !matchesLabelSelectorObject(m.namespaceSelector, subject?.metadata.labels ?? {}))
      return false;
  }
  if (m.objectSelector !== undefined) {
    const either = [req.object, req.oldObject].filter((o): o is KObject => o !== null);
    if (!either.some((o) => matchesLabelSelectorObject(m.objectSelector, o.metadata.labels ?? {})))
      return false;
  }
  return true;
}

function ruleMatches(rule: ResourceRule, req: AdmissionRequest): boolean {
  const has = (list: string[] | undefined, value: string) =>
    Array.isArray(list) && (list.includes('*') || list.includes(value));
  if (!has(rule.operations, req.operation)) return false;
  if (!has(rule.apiGroups, req.rt.group) || !has(rule.apiVersions, req.rt.version)) return false;
  const resources = rule.resources ?? [];
  const { plural } = req.rt;
  const sub = req.subresource;
  const resourceOk = sub
    ? ['*/*', `${plural}/*`, `*/${sub}`, `${plural}/${sub}`].some((r) => resources.includes(r))
    : ['*', '*/*', plural].some((r) => resources.includes(r));
  if (!resourceOk) return false;
  const scope = rule.scope ?? '*';
  const namespaced = req.rt.namespaced;
  if ((scope === 'Cluster' && namespaced) || (scope === 'Namespaced' && !namespaced)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(req.name);
}

function refusal(
  req: AdmissionRequest,
  policy: string,
  binding: string,
  denial: { message: string; reason: string },
): ApiError {
  const { rt } = req;
  const resource = rt.group ? `${rt.plural}.${rt.group}` : rt.plural;
  const why = `ValidatingAdmissionPolicy '${policy}' with binding '${binding}' denied request: ${denial.message}`;
  return new ApiError(
    REASON_CODES[denial.reason] ?? 422,
    denial.reason,
    `${resource} "${req.name}" is forbidden: ${why}`,
    {
      name: req.name,
      group: rt.group,
      kind: rt.plural,
      causes: [{ message: why }],
    },
  );
}

/**
 * Checks of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding objects (422 causes):
 * what the API server requires, every expression compiles, and what kube-sim does not simulate
 * (`paramKind`, `paramRef`) refused rather than silently ignored.
 */
export function admissionProblems(rt: ResourceType, obj: KObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  const required = (field: string) =>
    causes.push({ reason: 'FieldValueRequired', field, message: 'Required value' });
  const expression = (field: string, value: unknown) => {
    if (typeof value !== 'string' || value.trim() === '') return required(field);
    const error = compileError(value);
    if (error) causes.push({ field, message: `Invalid value: compilation failed: ${error}` });
  };
  const list = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);
  if (rt.kind === 'ValidatingAdmissionPolicy') {
    const policy = spec as PolicySpec;
    if (list(policy.matchConstraints?.resourceRules).length === 0)
      required('spec.matchConstraints.resourceRules');
    if (policy.failurePolicy !== undefined && !['Fail', 'Ignore'].includes(policy.failurePolicy))
      causes.push({
        field: 'spec.failurePolicy',
        message: `Unsupported value: "${String(policy.failurePolicy)}": supported values: "Fail", "Ignore"`,
      });
    if (policy.paramKind !== undefined)
      causes.push({ field: 'spec.paramKind', message: 'Invalid value: kube-sim does not simulate params' });
    const validations = list<Validation>(policy.validations);
    if (validations.length === 0) required('spec.validations');
    validations.forEach((v, i) => {
      expression(`spec.validations[${i}].expression`, v.expression);
      if (v.messageExpression !== undefined)
        expression(`spec.validations[${i}].messageExpression`, v.messageExpression);
    });
    list<{ expression: string }>(policy.matchConditions).forEach((c, i) =>
      expression(`spec.matchConditions[${i}].expression`, c.expression),
    );
    list<{ expression: string }>(policy.variables).forEach((v, i) =>
      expression(`spec.variables[${i}].expression`, v.expression),
    );
  }
  if (rt.kind === 'ValidatingAdmissionPolicyBinding') {
    const binding = spec as BindingSpec;
    if (!binding.policyName) required('spec.policyName');
    const actions = list<string>(binding.validationActions);
    if (actions.length === 0) required('spec.validationActions');
    for (const action of actions) {
      if (!['Deny', 'Warn', 'Audit'].includes(action))
        causes.push({
          field: 'spec.validationActions',
          message: `Unsupported value: "${action}": supported values: "Audit", "Deny", "Warn"`,
        });
    }
    if (binding.paramRef !== undefined)
      causes.push({ field: 'spec.paramRef', message: 'Invalid value: kube-sim does not simulate params' });
  }
  return causes;
}
