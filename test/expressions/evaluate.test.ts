import { describe, expect, it } from 'vitest';
import {
  evaluateTemplate,
  Lazy,
  Missing,
  RecordNode,
  TemplateEvaluationError,
} from '../../src/expressions/evaluate.js';
import type { Scope } from '../../src/expressions/evaluate.js';
import { parseTemplateString } from '../../src/expressions/syntax.js';

const scope: Scope = {
  roots: {
    var: {
      replicas: { dev: 1, prod: 3 },
      ports: [80, 8000],
      name: 'api',
      zero: 0,
      empty: '',
      none: null,
      list: ['a', 'b'],
      map: { a: 1 },
    },
    environment: new RecordNode({ name: 'prod' }),
    project: new RecordNode({ name: 'shop' }),
  },
  aliases: { variables: 'var' },
};

const evaluate = (text: string, within: Scope = scope) => evaluateTemplate(parseTemplateString(text), within);

function evaluationError(text: string): string {
  try {
    evaluate(text);
  } catch (error) {
    expect(error).toBeInstanceOf(TemplateEvaluationError);
    return (error as Error).message;
  }
  throw new Error(`expected an evaluation error for ${text}`);
}

describe('evaluating', () => {
  it.each([
    ['${1 + 2 * 3}', 7],
    ['${(1 + 2) * (3 + 4)}', 21],
    ['${10 - 4 - 3}', 3],
    ['${7 % 4}', 3],
    ['${9 / 2}', 4.5],
    ['${-var.replicas.prod}', -3],
    ['${var.replicas.prod >= 3 && var.replicas.dev < 2}', true],
    ['${var.replicas.prod <= 2 || var.replicas.dev > 0}', true],
    ['${"a" + "b"}', 'ab'],
    ['${"n=" + 1}', 'n=1'],
    ['${var.list + ["c"]}', ['a', 'b', 'c']],
    ['${[1, var.name, [true]]}', [1, 'api', [true]]],
    ['${environment.name == "prod" ? 3 : 1}', 3],
    ["${environment.name != 'prod'}", false],
    ['${var.replicas[environment.name]}', 3],
    ['${var.replicas["${environment.name}"]}', 3],
    ['${var.ports[1]}', 8000],
    ['${var.ports.0}', 80],
    ['${var.list contains "a"}', true],
    ['${var.map contains "a"}', true],
    ['${var.name contains "p"}', true],
    ['${var.ports contains 81}', false],
    ['${typeof var.name}', 'string'],
    ['${typeof var.nope}', 'undefined'],
    ['${!var.nope}', true],
    ['${!var.zero}', true],
    ['${!var.list}', false],
    ['${variables.name}', 'api'],
    ['${null}', null],
    ['${var.map}', { a: 1 }],
  ])('%s is %j', (text, expected) => {
    expect(evaluate(text)).toEqual(expected);
  });

  it('joins several parts into a string: lists as Garden does, mappings as JSON', () => {
    expect(evaluate('n=${var.replicas.prod} ok=${true} l=${var.list} m=${var.map} z=${var.none}')).toBe(
      'n=3 ok=true l=a,b m={"a":1} z=null',
    );
  });

  it('gives a default with || for a missing key, a false value, or an empty string (as Garden)', () => {
    expect(evaluate('${var.nope || "default"}')).toBe('default');
    expect(evaluate('${var.zero || 5}')).toBe(5);
    expect(evaluate('${var.empty || "x"}')).toBe('x');
    expect(evaluate('${var.name || "x"}')).toBe('api');
    expect(evaluate('${var.nope || var.other || "last"}')).toBe('last');
    // An empty list is truthy.
    expect(evaluate('${[] || "x"}')).toEqual([]);
  });

  it('makes && false on a missing key, and ?: take the else branch', () => {
    expect(evaluate('${var.nope && "x"}')).toBe(false);
    expect(evaluate('${var.name && var.nope}')).toBe(false);
    expect(evaluate('${var.name && 2}')).toBe(2);
    expect(evaluate('${var.zero && 2}')).toBe(0);
    expect(evaluate('${var.nope ? 1 : 2}')).toBe(2);
  });

  it('evaluates only the branch taken', () => {
    expect(evaluate('${true ? 1 : var.nope.deeper}')).toBe(1);
    expect(evaluate('${var.name || nosuchfunction()}')).toBe('api');
  });

  it('reports a missing key as Missing with the reason, and "?" makes it no value', () => {
    const missing = evaluate('${var.nope}');
    expect(missing).toBeInstanceOf(Missing);
    expect((missing as Missing).reason).toBe(
      'unknown key "var.nope"; available: var.replicas, var.ports, var.name, var.zero, var.empty, var.none, var.list, var.map',
    );
    expect(evaluate('${var.nope}?')).toBeUndefined();
    expect((evaluate('${var.ports[5]}') as Missing).reason).toBe(
      'unknown key "var.ports[5]"; "var.ports" is a list of 2 items (indexes 0 to 1)',
    );
    expect((evaluate('${var.name.x}') as Missing).reason).toBe(
      'unknown key "var.name.x"; "var.name" is a value, not a mapping',
    );
    expect((evaluate('${nope.x}') as Missing).reason).toBe(
      'unknown key "nope.x"; available: var, environment, project',
    );
    // A whole context without a value of its own is an error, not a key that is not there: a
    // conditional would read that as false.
    for (const template of ['${project}', '${project ? "has" : "none"}', '${project || "none"}']) {
      expect(() => evaluate(template), template).toThrow(
        'incomplete template expression "project"; expected one of: project.name',
      );
    }
  });

  it('evaluates ${if} blocks', () => {
    expect(evaluate('${if environment.name == "prod"}P${else}D${endif}')).toBe('P');
    expect(evaluate('a ${if var.zero}yes${endif}b')).toBe('a b');
    expect(evaluate('${if true}${if false}x${else}y${endif}${endif}')).toBe('y');
  });

  it('reads a Lazy value once, when first used', () => {
    let reads = 0;
    const lazy = new Lazy(() => {
      reads++;
      return 'main';
    });
    const within: Scope = { roots: { git: new RecordNode({ branch: lazy }) } };
    expect(reads).toBe(0);
    expect(evaluate('${git.branch}-${git.branch}', within)).toBe('main-main');
    expect(reads).toBe(1);
  });

  it.each([
    ['${"a" - 1}', '"-" needs two numbers (got string and number)'],
    ['${var.list * 2}', '"*" needs two numbers (got list and number)'],
    ['${var.map + 1}', '"+" needs two numbers, two strings or two lists (got mapping and number)'],
    ['${1 / 0}', '"/" by zero'],
    ['${5 % 0}', '"%" by zero'],
    ['${-"a"}', 'unary "-" needs a number (got string)'],
    [
      '${var.replicas[var.list]}',
      'a key in brackets must be a string or a number (got list in "var.replicas[var.list]")',
    ],
    ['${1 contains 1}', 'the left side of "contains" must be a string, list or mapping (got number)'],
    [
      '${var.list contains var.list}',
      'the right side of "contains" must be a string, number, boolean or null (got list)',
    ],
  ])('refuses %s', (text, message) => {
    expect(evaluationError(text)).toBe(message);
  });
});
