/**
 * The action graph: nodes are actions, edges are `dependencies:` plus the actions referenced in
 * template expressions and the Builds named in `copyFrom` or `build`. A cycle is an error that prints its path.
 * A reference to what the configuration says of an action (`${actions.build.api.buildPath}`) makes
 * it a dependency, as Garden does (Garden resolves it first, tend runs it first), but not when the
 * environment leaves that action out: its value is known from the configuration, and Garden does
 * not run a disabled action for it either.
 */
import type { ActionConfig } from '../config/project.js';
import { directDependencies } from '../config/build-keys.js';
import { TendError } from '../errors.js';

export interface ActionNode {
  config: ActionConfig;
  ref: string;
  /** Explicit, template and build-directory dependencies, without duplicates, sorted. */
  dependencies: string[];
  /** Its spec's templates read other actions' outputs (`${actions.…}`). */
  readsOutputs: boolean;
  dependants: string[];
}

export class ActionGraph {
  readonly nodes = new Map<string, ActionNode>();

  constructor(actions: ActionConfig[]) {
    const defined = new Set(actions.map((config) => config.ref));
    for (const config of actions) {
      const { refs: dependencies, readsOutputs } = directDependencies(config, (ref) => defined.has(ref));
      this.nodes.set(config.ref, {
        config,
        ref: config.ref,
        dependencies,
        readsOutputs,
        dependants: [],
      });
    }
    for (const node of this.nodes.values()) {
      for (const dep of node.dependencies) {
        const target = this.nodes.get(dep);
        if (!target) {
          throw new TendError(
            'TEND_GRAPH_MISSING_DEPENDENCY',
            `${node.ref} depends on ${dep}, which is not defined; defined: ${this.refsNear(dep)}`,
            { location: node.config.location, actionRef: node.ref },
          );
        }
        target.dependants.push(node.ref);
      }
    }
    this.assertAcyclic();
  }

  get(ref: string): ActionNode {
    const node = this.nodes.get(ref);
    if (!node) {
      throw new TendError('TEND_ACTION_NOT_FOUND', `no action ${ref}; defined: ${this.refsNear(ref)}`);
    }
    return node;
  }

  /** The given actions and everything they depend on, dependencies first. */
  closure(refs: Iterable<string>): string[] {
    const order: string[] = [];
    const seen = new Set<string>();
    const visit = (ref: string) => {
      if (seen.has(ref)) return;
      seen.add(ref);
      for (const dep of this.get(ref).dependencies) visit(dep);
      order.push(ref);
    };
    for (const ref of refs) visit(ref);
    return order;
  }

  /** Every action, dependencies first. */
  topologicalOrder(): string[] {
    return this.closure([...this.nodes.keys()].sort());
  }

  private refsNear(ref: string): string {
    const kind = ref.split('.')[0];
    const same = [...this.nodes.keys()].filter((r) => r.startsWith(`${kind}.`)).sort();
    return (same.length > 0 ? same : [...this.nodes.keys()].sort()).slice(0, 10).join(', ') || '(none)';
  }

  private assertAcyclic(): void {
    const state = new Map<string, 'visiting' | 'done'>();
    const stack: string[] = [];
    const visit = (ref: string) => {
      const s = state.get(ref);
      if (s === 'done') return;
      if (s === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(ref)), ref];
        throw new TendError('TEND_GRAPH_CYCLE', `dependency cycle: ${cycle.join(' → ')}`, {
          location: this.nodes.get(ref)!.config.location,
          actionRef: ref,
          detail: { cycle },
        });
      }
      state.set(ref, 'visiting');
      stack.push(ref);
      for (const dep of this.nodes.get(ref)!.dependencies) visit(dep);
      stack.pop();
      state.set(ref, 'done');
    };
    for (const ref of [...this.nodes.keys()].sort()) visit(ref);
  }
}
