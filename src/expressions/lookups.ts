/** The lookups of a parsed template (syntax.ts): which keys of its contexts it reads. */
import type { Expression, Template, TemplatePart } from './syntax.js';

/**
 * Every lookup in an expression or template, nested ones included; `optional` when it is inside
 * an optional expression (`${…}?`), where a key that is not there is no value.
 */
export function eachLookup(
  node: Expression | Template,
  onLookup: (lookup: Extract<Expression, { type: 'lookup' }>, optional: boolean) => void,
): void {
  if ('parts' in node) {
    const visitParts = (parts: TemplatePart[]) => {
      for (const part of parts) {
        if (part.type === 'expression')
          eachLookup(part.expression, part.optional ? (lookup) => onLookup(lookup, true) : onLookup);
        if (part.type === 'if') {
          eachLookup(part.condition, onLookup);
          visitParts(part.then);
          visitParts(part.else);
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
      return node.elements.forEach((e) => eachLookup(e, onLookup));
    case 'lookup':
      onLookup(node, false);
      return node.path.forEach((segment) => typeof segment !== 'string' && eachLookup(segment, onLookup));
    case 'call':
      return node.args.forEach((e) => eachLookup(e, onLookup));
    case 'not':
    case 'typeof':
    case 'negate':
      return eachLookup(node.operand, onLookup);
    case 'binary':
    case 'and':
    case 'or':
      eachLookup(node.left, onLookup);
      return eachLookup(node.right, onLookup);
    case 'conditional':
      eachLookup(node.test, onLookup);
      eachLookup(node.consequent, onLookup);
      return eachLookup(node.alternate, onLookup);
    case 'template':
      return eachLookup(node.template, onLookup);
  }
}
