/**
 * The optional suffix `${…}?` in each of the readings the caller chooses (`optionalSuffix`):
 * tend's own (`whole-value`, the default), every expression (Garden 0.12 and 0.13: apiVersion
 * garden.io/v0 and v1) and text (Garden's garden.io/v2).
 */
import { describe, expect, it } from 'vitest';
import { evaluateTemplate, Missing, RecordNode } from '../../src/expressions/evaluate.js';
import type { Scope } from '../../src/expressions/evaluate.js';
import { parseTemplateString, partOffset, TemplateSyntaxError } from '../../src/expressions/syntax.js';
import type { OptionalSuffix, Template } from '../../src/expressions/syntax.js';

const scope: Scope = {
  roots: {
    var: { project: 'local', zero: 0, empty: '', list: ['a', 'b'] },
    environment: new RecordNode({ name: 'dev' }),
  },
};

const parse = (text: string, optionalSuffix?: OptionalSuffix) =>
  parseTemplateString(text, optionalSuffix ? { optionalSuffix } : {});
const evaluate = (text: string, optionalSuffix?: OptionalSuffix) =>
  evaluateTemplate(parse(text, optionalSuffix), scope);

/** Each part as `text`, `${…}` (its source) or `${…}?!` when optional. */
function partsOf(template: Template): string[] {
  return template.parts.map((part) => {
    if (part.type === 'text') return `text ${JSON.stringify(part.text)}`;
    return `${part.type === 'expression' && part.optional ? 'optional' : part.type} ${part.source}`;
  });
}

function syntaxError(text: string, optionalSuffix: OptionalSuffix): TemplateSyntaxError {
  try {
    parse(text, optionalSuffix);
  } catch (error) {
    expect(error).toBeInstanceOf(TemplateSyntaxError);
    return error as TemplateSyntaxError;
  }
  throw new Error(`expected a syntax error for ${text}`);
}

describe('every-expression: "${…}?" is optional wherever it stands', () => {
  it('takes the "?" right after each "}" as the suffix of its expression', () => {
    expect(partsOf(parse('--project=${var.project}?', 'every-expression'))).toEqual([
      'text "--project="',
      'optional ${var.project}?',
    ]);
    expect(partsOf(parse('${ var.project }?', 'every-expression'))).toEqual(['optional ${ var.project }?']);
    expect(partsOf(parse('a${var.x}?b${var.y}c', 'every-expression'))).toEqual([
      'text "a"',
      'optional ${var.x}?',
      'text "b"',
      'expression ${var.y}',
      'text "c"',
    ]);
    // One "?" is the suffix; a second one is text, as in Garden's grammar.
    expect(partsOf(parse('${var.x}??', 'every-expression'))).toEqual(['optional ${var.x}?', 'text "?"']);
    // Only right after the "}": a space between makes the "?" text.
    expect(partsOf(parse('${var.x} ?', 'every-expression'))).toEqual(['expression ${var.x}', 'text " ?"']);
    expect(partOffset(parse('ab${var.x}?', 'every-expression').parts[1]!)).toBe(2);
  });

  it('leaves a "?" inside a string literal, or after an escaped "$${", as text', () => {
    expect(partsOf(parse('${var.x == "a}?"}', 'every-expression'))).toEqual(['expression ${var.x == "a}?"}']);
    expect(evaluate('${"why?" + var.project}', 'every-expression')).toBe('why?local');
    expect(evaluate('${var.x ? "yes?" : "no?"}', 'every-expression')).toBe('no?');
    expect(partsOf(parse('$${var.x}?', 'every-expression'))).toEqual(['text "${var.x}?"']);
    expect(evaluate('a $${var.nope}? b ${var.project}?', 'every-expression')).toBe('a ${var.nope}? b local');
  });

  it('reads nested templates (in string literals) the same way', () => {
    const [outer] = parse('${"${var.nope}?"}', 'every-expression').parts;
    if (outer?.type !== 'expression' || outer.expression.type !== 'template') throw new Error('not nested');
    expect(partsOf(outer.expression.template)).toEqual(['optional ${var.nope}?']);
    expect(evaluate('pre-${"${var.nope}?"}-post', 'every-expression')).toBe('pre--post');
    expect(evaluate('${"${var.project}?-x"}', 'every-expression')).toBe('local-x');
  });

  it('gives a found value as it is: its type kept for a whole value, written into a longer string', () => {
    expect(evaluate('--project=${var.project}?', 'every-expression')).toBe('--project=local');
    expect(evaluate('${var.project}?', 'every-expression')).toBe('local');
    expect(evaluate('${var.zero}?', 'every-expression')).toBe(0);
    expect(evaluate('${var.list}?', 'every-expression')).toEqual(['a', 'b']);
    expect(evaluate('n=${var.zero}?, l=${var.list}?', 'every-expression')).toBe('n=0, l=a,b');
    expect(evaluate('${var.nope || "default"}?', 'every-expression')).toBe('default');
  });

  it('gives no value for a key that is not there: undefined as a whole value, nothing in a string', () => {
    expect(evaluate('${var.nope}?', 'every-expression')).toBeUndefined();
    expect(evaluate('--project=${var.nope}?', 'every-expression')).toBe('--project=');
    expect(evaluate('${var.nope}??', 'every-expression')).toBe('?');
    expect(evaluate('${var.nope}?${environment.nope}?', 'every-expression')).toBe('');
    expect(evaluate('${var.nope.deeper[var.nope]}?', 'every-expression')).toBeUndefined();
    // An expression without the suffix is still an error.
    expect(evaluate('${var.nope}?-${var.other}', 'every-expression')).toBeInstanceOf(Missing);
  });
});

describe('text: the "?" after "${…}" is text', () => {
  it('parses the "?" as text, whole value or not', () => {
    expect(partsOf(parse('${var.project}?', 'text'))).toEqual(['expression ${var.project}', 'text "?"']);
    expect(partsOf(parse('--project=${var.project}?', 'text'))).toEqual([
      'text "--project="',
      'expression ${var.project}',
      'text "?"',
    ]);
    const [outer] = parse('${"${var.x}?"}', 'text').parts;
    if (outer?.type !== 'expression' || outer.expression.type !== 'template') throw new Error('not nested');
    expect(partsOf(outer.expression.template)).toEqual(['expression ${var.x}', 'text "?"']);
  });

  it('writes the value followed by "?", and a key that is not there is missing', () => {
    expect(evaluate('--project=${var.project}?', 'text')).toBe('--project=local?');
    expect(evaluate('${var.project}?', 'text')).toBe('local?');
    expect(evaluate('${var.zero}?', 'text')).toBe('0?');
    expect(evaluate('${var.list}?', 'text')).toBe('a,b?');
    expect(evaluate('${var.project}??', 'text')).toBe('local??');
    expect(evaluate('$${var.x}?', 'text')).toBe('${var.x}?');
    const missing = evaluate('${var.nope}?', 'text');
    expect(missing).toBeInstanceOf(Missing);
    expect((missing as Missing).reason).toMatch(/^unknown key "var.nope"/);
  });
});

describe('whole-value (tend\'s own, the default): only a value that is one "${…}?" is optional', () => {
  it('is the default', () => {
    expect(partsOf(parse('${var.x}?'))).toEqual(['optional ${var.x}?']);
    expect(partsOf(parse('--project=${var.x}?'))).toEqual([
      'text "--project="',
      'expression ${var.x}',
      'text "?"',
    ]);
  });

  it('gives no value for a whole value whose key is not there; elsewhere the "?" is text', () => {
    expect(evaluate('${var.nope}?', 'whole-value')).toBeUndefined();
    expect(evaluate('${var.project}?', 'whole-value')).toBe('local');
    expect(evaluate('--project=${var.project}?', 'whole-value')).toBe('--project=local?');
    expect(evaluate('--project=${var.nope}?', 'whole-value')).toBeInstanceOf(Missing);
    expect(evaluate('${var.project}??', 'whole-value')).toBe('local??');
    expect(evaluate('${if var.project}x${endif}?', 'whole-value')).toBe('x?');
  });
});

describe('errors', () => {
  it.each(['every-expression', 'text'] as const)('refuses "${if …}?" with %s, as Garden does', (suffix) => {
    const error = syntaxError('a ${if var.x}?b${endif}', suffix);
    expect(error.message).toBe(
      'invalid template expression "${if var.x}?": an ${if ...} cannot have the optional suffix "?"; remove the "?"',
    );
    expect(error.offset).toBe(2);
    // ${else} and ${endif} take no suffix: the "?" after them is text.
    expect(evaluate('${if var.project}a${else}?b${endif}?', suffix)).toBe('a?');
  });

  it.each(['whole-value', 'every-expression', 'text'] as const)(
    'refuses an empty or unfinished expression before a "?" with %s',
    (suffix) => {
      const empty = syntaxError('x ${}?', suffix);
      expect(empty.message).toBe(
        'invalid template expression "${}"; expected a value (a key, a literal, a function call or "("), found "}" at offset 2',
      );
      expect(empty.offset).toBe(2);
      expect(syntaxError('${var.x?}', suffix).message).toBe(
        'invalid template expression "${var.x?}"; expected a value (a key, a literal, a function call or "("), found "}" at offset 8',
      );
      expect(syntaxError('${var.x}?${', suffix).message).toBe(
        'unterminated template expression "${"; expected a closing "}"',
      );
    },
  );
});
