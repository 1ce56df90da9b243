/** The lookups of a parsed template (syntax.ts): which keys of its contexts it reads. */
import type { Expression, Template, TemplatePart } from './syntax.js';

/**
 * Which way a condition goes, when that is known where the lookups are collected (undefined when
 * it is not: it reads an action's outputs). Garden follows only the branch that will be used
 * (core/src/template/analysis.ts getContextLookupReferences).
 */
export type BranchTest = (condition: Expression) => boolean | undefined;

type Lookup = Extract<Expression, { type: 'lookup' }>;

/**
 * Called for a lookup; `optional` when it is inside an optional expression (`${…}?`), where a key
 * that is not there is no value; `branched` when it is inside a branch whose condition is not
 * known where the lookups are collected (read in some environments, or once an action ran, only).
 */
export type OnLookup = (lookup: Lookup, optional: boolean, branched?: boolean) => void;

/**
 * Visits the branches of a condition: `then` unless the test says it is false, `otherwise`
 * unless it says true, each with the lookups said to be branched when the test does not know.
 */
export function visitBranches(
  known: boolean | undefined,
  onLookup: OnLookup,
  then: (onLookup: OnLookup) => void,
  otherwise: (onLookup: OnLookup) => void,
): void {
  const inBranch: OnLookup =
    known === undefined ? (lookup, optional) => onLookup(lookup, optional, true) : onLookup;
  if (known !== false) then(inBranch);
  if (known !== true) otherwise(inBranch);
}

/**
 * Every lookup in an expression or template, nested ones included. With `test`, a branch (`?:`,
 * `${if}`, the right of `&&`/`||`) its condition rules out is skipped.
 */
export function eachLookup(node: Expression | Template, onLookup: OnLookup, test?: BranchTest): void {
  const visit = (inner: Expression | Template, on: OnLookup = onLookup) => eachLookup(inner, on, test);
  if ('parts' in node) {
    const visitParts = (parts: TemplatePart[], on: OnLookup) => {
      for (const part of parts) {
        if (part.type === 'expression')
          visit(part.expression, part.optional ? (lookup, _, branched) => on(lookup, true, branched) : on);
        if (part.type === 'if') {
          visit(part.condition, on);
          visitBranches(
            test?.(part.condition),
            on,
            (inBranch) => visitParts(part.then, inBranch),
            (inBranch) => visitParts(part.else, inBranch),
          );
        }
      }
    };
    visitParts(node.parts, onLookup);
    return;
  }
  switch (node.type) {
    case 'literal':
      return;
    case 'array':
      return node.elements.forEach((element) => visit(element));
    case 'lookup':
      onLookup(node, false);
      return node.path.forEach((segment) => typeof segment !== 'string' && visit(segment));
    case 'call':
      return node.args.forEach((arg) => visit(arg));
    case 'not':
    case 'typeof':
    case 'negate':
      return visit(node.operand);
    case 'binary':
      visit(node.left);
      return visit(node.right);
    // The right of `a || b` is read only when `a` is false, of `a && b` only when `a` is true.
    case 'and':
    case 'or':
      visit(node.left);
      return visitBranches(
        test?.(node.left),
        onLookup,
        (inBranch) => node.type === 'and' && visit(node.right, inBranch),
        (inBranch) => node.type === 'or' && visit(node.right, inBranch),
      );
    case 'conditional':
      visit(node.test);
      return visitBranches(
        test?.(node.test),
        onLookup,
        (inBranch) => visit(node.consequent, inBranch),
        (inBranch) => visit(node.alternate, inBranch),
      );
    case 'template':
      return visit(node.template);
  }
}
