/**
 * The `local.*` template context: the user running tend, the process environment (`local.env`),
 * and Garden's keys derived from them (environment.ts).
 */
import { Missing, RecordNode } from '../expressions/evaluate.js';
import type { ContextNode, LookupPlace } from '../expressions/evaluate.js';

/** The members of `local`, its `env` a node that names a variable that is not set. */
export function localMembers(local: { env: Record<string, string | undefined> }): Record<string, unknown> {
  return { ...local, env: new EnvironmentVariablesNode(local.env) };
}

/** `local.env.<NAME>`: the process environment. */
class EnvironmentVariablesNode implements ContextNode {
  constructor(private readonly env: Record<string, string | undefined>) {}

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    const value = Object.hasOwn(this.env, name) ? this.env[name] : undefined;
    if (value === undefined)
      return new Missing(`environment variable "${name}" is not set (used as "${place.text}")`);
    return value;
  }

  completions(prefix: string): string[] {
    return [`${prefix}.<NAME>`];
  }
}

/**
 * `local.*`; Garden's `artifactsPath`, the directory it copies a Test's or Run's `artifacts` into,
 * is not there, as tend copies none: said so rather than as a key never heard of.
 */
export class LocalNode extends RecordNode {
  override member(key: string | number, place: LookupPlace): unknown {
    const value = super.member(key, place);
    if (key !== 'artifactsPath' || !(value instanceof Missing)) return value;
    return new Missing(
      `unknown key "${place.text}": Garden's directory of the artifacts Tests and Runs export is not ` +
        "supported, as tend copies no artifacts (a Test's or Run's `artifacts` are ignored); " +
        'write the files to a path of your own (e.g. under ${local.projectPath})',
    );
  }
}
