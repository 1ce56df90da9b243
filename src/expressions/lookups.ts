/** The lookups of a parsed template (syntax.ts): which keys of its contexts it reads. */
import type { Expression, Template, TemplatePart } from './syntax.js';

/**
 * Which way a condition goes, when that is known where the lookups are collected (undefined when
 * it is not: it reads an action's outputs). Garden follows only the branch that will be used
 * (core/src/template/analysis.ts getContextLookupReferences).
 */
export type BranchTest = (condition: Expression) => boolean | undefined;

/** Visits `then` unless the test says the condition is false, `otherwise` unless it says true. */
function visitBranches(
  condition: Expression,
  test: BranchTest | undefined,
  then: () => void,
  otherwise: () => void,
): void {
  const known = test?.(condition);
  if (known !== false) then();
  if (known !== true) otherwise();
}

/**
 * Every lookup in an expression or template, nested ones included; `optional` when it is inside
 * an optional expression (`${…}?`), where a key that is not there is no value. With `test`, a
 * branch (`?:`, `${if}`, the right of `&&`/`||`) its condition rules out is skipped.
 */
export function eachLookup(
  node: Expression | Template,
  onLookup: (lookup: Extract<Expression, { type: 'lookup' }>, optional: boolean) => void,
  test?: BranchTest,
): void {
  const visit = (inner: Expression | Template) => eachLookup(inner, onLookup, test);
  if ('parts' in node) {
    const visitParts = (parts: TemplatePart[]) => {
      for (const part of parts) {
        if (part.type === 'expression')
          eachLookup(part.expression, part.optional ? (lookup) => onLookup(lookup, true) : onLookup, test);
        if (part.type === 'if') {
          visit(part.condition);
          visitBranches(
            part.condition,
            test,
            () => visitParts(part.then),
            () => visitParts(part.else),
          );
        }
      }
    };
    visitParts(node.parts);
    return;
  }
  switch (node.type) {
    case 'literal':
      return;
    case 'array':
      return node.elements.forEach(visit);
    case 'lookup':
      onLookup(node, false);
      return node.path.forEach((segment) => typeof segment !== 'string' && visit(segment));
    case 'call':
      return node.args.forEach(visit);
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
        node.left,
        test,
        () => node.type === 'and' && visit(node.right),
        () => node.type === 'or' && visit(node.right),
      );
    case 'conditional':
      visit(node.test);
      return visitBranches(
        node.test,
        test,
        () => visit(node.consequent),
        () => visit(node.alternate),
      );
    case 'template':
      return visit(node.template);
  }
}
