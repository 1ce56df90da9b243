/**
 * `inputs.*` of an action a Garden ConfigTemplate rendered (docs/garden.md#config-templates): the
 * RenderTemplate's inputs, as template-context.ts's scopes read them.
 */
import { TendError, type SourceLocation } from '../errors.js';
import { Missing, NotYetKnownError, TemplateEvaluationError } from '../expressions/evaluate.js';
import type { ContextNode, LookupPlace, Scope } from '../expressions/evaluate.js';

/** Where a RenderTemplate's input is written; undefined when it is not (a default, a matrix value). */
export type LocateInput = (name: string) => SourceLocation | undefined;

/**
 * `inputs.<key>`: a RenderTemplate's inputs. An input holding a template is resolved when first
 * read, in the scope of the expression reading it (an input that reads itself is a cycle): one
 * that reads what is known only later (provider or action outputs) is resolved when that
 * expression is, as Garden resolves inputs lazily.
 */
export class InputsNode implements ContextNode {
  private readonly resolved = new Map<string, unknown>();
  private readonly resolving = new Set<string>();
  scope!: Scope;

  constructor(
    private readonly inputs: Record<string, unknown>,
    /** Resolves an input's value that holds templates, in the scope of the expression reading it. */
    private readonly resolve: (value: unknown, scope: Scope) => unknown,
    private readonly holdsTemplate: (value: unknown) => boolean,
    /** An input's own error is reported where the input is written, when that is known. */
    private readonly locate?: LocateInput,
  ) {}

  member(key: string | number, place: LookupPlace): unknown {
    const name = String(key);
    const raw = Object.hasOwn(this.inputs, name) ? this.inputs[name] : undefined;
    if (raw === undefined) {
      const names = this.completions(place.prefix);
      return new Missing(`unknown input "${place.text}"; available: ${names.join(', ') || '(none)'}`);
    }
    if (!this.holdsTemplate(raw)) return raw;
    if (this.resolved.has(name)) return this.resolved.get(name);
    if (this.resolving.has(name)) {
      throw new TemplateEvaluationError(`input "inputs.${name}" reads itself; give it a value`);
    }
    this.resolving.add(name);
    try {
      const value = this.resolve(raw, this.scope);
      this.resolved.set(name, value);
      return value;
    } catch (error) {
      // An input read by this one, with its own location, is where the problem is.
      if (error instanceof TendError) throw error;
      const message = `in input "inputs.${name}": ${(error as Error).message}`;
      if (error instanceof NotYetKnownError) throw new NotYetKnownError(message);
      const location = this.locate?.(name);
      if (location) throw new TendError('TEND_TEMPLATE', message, { location });
      throw new TemplateEvaluationError(message);
    } finally {
      this.resolving.delete(name);
    }
  }

  completions(prefix: string): string[] {
    return Object.keys(this.inputs)
      .filter((k) => this.inputs[k] !== undefined)
      .map((k) => `${prefix}.${k}`);
  }
}
