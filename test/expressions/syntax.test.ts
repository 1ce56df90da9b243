import { describe, expect, it } from 'vitest';
import { maxDepth, parseTemplateString, TemplateSyntaxError } from '../../src/expressions/syntax.js';
import type { Expression } from '../../src/expressions/syntax.js';

/** The single expression of `${…}`. */
function expression(source: string): Expression {
  const { parts } = parseTemplateString(`\${${source}}`);
  expect(parts).toHaveLength(1);
  const [part] = parts;
  if (part?.type !== 'expression') throw new Error(`not one expression: ${source}`);
  return part.expression;
}

/** The expression's shape with operators in prefix form: `(+ 1 (* 2 3))`. */
function shape(node: Expression): string {
  switch (node.type) {
    case 'literal':
      return JSON.stringify(node.value);
    case 'array':
      return `[${node.elements.map(shape).join(' ')}]`;
    case 'lookup':
      return node.root + node.path.map((s) => (typeof s === 'string' ? `.${s}` : `[${shape(s)}]`)).join('');
    case 'call':
      return `${node.name}(${node.args.map(shape).join(' ')})`;
    case 'not':
    case 'typeof':
    case 'negate':
      return `(${node.type} ${shape(node.operand)})`;
    case 'binary':
      return `(${node.operator} ${shape(node.left)} ${shape(node.right)})`;
    case 'and':
    case 'or':
      return `(${node.type} ${shape(node.left)} ${shape(node.right)})`;
    case 'conditional':
      return `(? ${shape(node.test)} ${shape(node.consequent)} ${shape(node.alternate)})`;
    case 'template':
      return `template`;
  }
}

function syntaxError(text: string): string {
  try {
    parseTemplateString(text);
  } catch (error) {
    expect(error).toBeInstanceOf(TemplateSyntaxError);
    return (error as Error).message;
  }
  throw new Error(`expected a syntax error for ${text}`);
}

describe('template strings', () => {
  it('splits text and expressions; $${ is a literal ${', () => {
    expect(parseTemplateString('a-${var.x}-$${b} $5').parts).toEqual([
      { type: 'text', text: 'a-' },
      {
        type: 'expression',
        source: '${var.x}',
        expression: { type: 'lookup', root: 'var', path: ['x'], text: 'var.x' },
      },
      { type: 'text', text: '-${b} $5' },
    ]);
    expect(parseTemplateString('no templates').parts).toEqual([{ type: 'text', text: 'no templates' }]);
  });

  it('ends an expression at its own "}", not at one inside a string', () => {
    const { parts } = parseTemplateString('${"}" + "{"}!');
    expect(parts.map((p) => p.type)).toEqual(['expression', 'text']);
  });

  it('reads ${if}/${else}/${endif} blocks, nested', () => {
    const { parts } = parseTemplateString('a${if x}b${if y}c${endif}${else}d${endif}e');
    expect(parts).toHaveLength(3);
    const block = parts[1]!;
    if (block.type !== 'if') throw new Error('not an if block');
    expect(block.then.map((p) => p.type)).toEqual(['text', 'if']);
    expect(block.else).toEqual([{ type: 'text', text: 'd' }]);
  });

  it('marks a whole value with a "?" suffix as optional, and only a whole value', () => {
    const optional = (text: string) => parseTemplateString(text).parts.map((p) => 'optional' in p);
    expect(optional('${var.x}?')).toEqual([true]);
    expect(optional('is it ${var.x}?')).toEqual([false, false, false]);
    expect(optional('${var.x}')).toEqual([false]);
  });
});

describe('expressions', () => {
  it.each([
    ['1 + 2 * 3', '(+ 1 (* 2 3))'],
    ['(1 + 2) * 3', '(* (+ 1 2) 3)'],
    ['10 - 4 - 3', '(- (- 10 4) 3)'],
    ['a || b && c', '(or a (and b c))'],
    ['a == b || c != d', '(or (== a b) (!= c d))'],
    ['a < b == c >= d', '(== (< a b) (>= c d))'],
    ['!a && typeof b == "string"', '(and (not a) (== (typeof b) "string"))'],
    ['a ? b : c ? d : e', '(? a b (? c d e))'],
    ['x contains "y" * 2', '(* (contains x "y") 2)'],
    ['var.my-key - 1', '(- var.my-key 1)'],
    ['actions.build[var.app].outputs.x', 'actions.build[var.app].outputs.x'],
    ['var.list[0].name', 'var.list[0].name'],
    ['var.list.0', 'var.list.0'],
    ['join(["a", "b"], ",")', 'join(["a" "b"] ",")'],
    ['-1', '(negate 1)'],
    ['0x1F + .5 + 1e3', '(+ (+ 31 0.5) 1000)'],
    ['true != false && null == null', '(and (!= true false) (== null null))'],
    ['\'single\' + "double"', '(+ "single" "double")'],
    ['var.m["${environment.name}"]', 'var.m[template]'],
    ['  var.x  ', 'var.x'],
  ])('parses %s', (source, expected) => {
    expect(shape(expression(source))).toBe(expected);
  });

  it('reads escapes in strings', () => {
    expect(expression(String.raw`"a\n\t\"\u0041\x42\\"`)).toEqual({ type: 'literal', value: 'a\n\t"AB\\' });
  });

  it.each([
    ['${var.team', 'unterminated template expression "${var.team"; expected a closing "}"'],
    ['${"abc', 'unterminated template expression "${"abc"; expected a closing "}"'],
    ['${var.a +', 'unterminated template expression "${var.a +"; expected a closing "}"'],
    [
      '${var.a +}',
      'invalid template expression "${var.a +}"; expected a value after "+", found "}" at offset 9',
    ],
    [
      '${var.a +1}',
      'invalid template expression "${var.a +1}"; expected a space after "+" (as in "a + b"; "a+b" is one key), found "1" at offset 9',
    ],
    [
      '${}',
      'invalid template expression "${}"; expected a value (a key, a literal, a function call or "("), found "}" at offset 2',
    ],
    ['${a b}', 'invalid template expression "${a b}"; expected a closing "}", found "b" at offset 4'],
    [
      '${a\u0000}',
      'invalid template expression "${a\u0000}"; expected a closing "}", found "\\u0000" at offset 3',
    ],
    ['${f(1 2)}', 'invalid template expression "${f(1 2)}"; expected "," or ")", found "2" at offset 6'],
    [
      '${a ? b}',
      'invalid template expression "${a ? b}"; expected ":" of a "?:" conditional, found "}" at offset 7',
    ],
    ['${1e999}', 'number 1e999 is too large; numbers in templates go up to 9007199254740991'],
    [
      '${123456789012345678901234567890123}',
      'number 123456789012345678901234567890… is too large; numbers in templates go up to 9007199254740991',
    ],
    ['${else}', 'found "${else}" without an ${if ...} before it'],
    ['${endif}', 'found "${endif}" without an ${if ...} before it'],
    ['${if a}x', 'missing ${endif} after "${if a}"'],
    ['${if a}x${else}y${else}z${endif}', 'more than one ${else} in one ${if ...} block'],
  ])('refuses %j', (text, message) => {
    expect(syntaxError(text)).toBe(message);
  });

  it('refuses 10,000 nested parentheses with a clear error, not a stack overflow', () => {
    const deep = `\${${'('.repeat(10_000)}1${')'.repeat(10_000)}}`;
    expect(syntaxError(deep)).toMatch(
      new RegExp(`^template expression nested too deeply \\(more than ${maxDepth} levels\\)`),
    );
    expect(syntaxError(`\${${'!'.repeat(10_000)}true}`)).toMatch(/nested too deeply/);
    expect(syntaxError(`\${${'['.repeat(10_000)}}`)).toMatch(/nested too deeply/);
  });

  it('refuses a 10,000-operator chain, which would nest as deep when evaluated', () => {
    expect(syntaxError(`\${1${' + 1'.repeat(10_000)}}`)).toMatch(/nested too deeply/);
    expect(shape(expression(`1${' + 1'.repeat(100)}`))).toMatch(/^\(\+/);
  });
});
