/*
 * The examples marked "Garden's" are taken from Garden's reference documentation
 * (docs/reference/template-strings/functions.md, https://github.com/garden-io/garden), which is
 * licensed under the Mozilla Public License 2.0 (https://mozilla.org/MPL/2.0/).
 */
import { describe, expect, it } from 'vitest';
import { evaluateTemplate, RecordNode } from '../../src/expressions/evaluate.js';
import { callFunction, helperFunctions, TemplateFunctionError } from '../../src/expressions/functions.js';
import { parseTemplateString } from '../../src/expressions/syntax.js';

const evaluate = (text: string) =>
  evaluateTemplate(parseTemplateString(text), {
    roots: { var: { list: ['a', 'b'] }, project: new RecordNode({ name: 'shop' }) },
  });

function functionError(text: string): string {
  try {
    evaluate(text);
  } catch (error) {
    expect(error).toBeInstanceOf(TemplateFunctionError);
    return (error as Error).message;
  }
  throw new Error(`expected an error for ${text}`);
}

describe("Garden's examples", () => {
  it.each([
    ['${base64Decode("bXkgdmFsdWU=")}', 'my value'],
    ['${base64Encode("my value")}', 'bXkgdmFsdWU='],
    ['${camelCase("Foo Bar")}', 'fooBar'],
    ['${camelCase("--foo-bar--")}', 'fooBar'],
    ['${camelCase("__FOO_BAR__")}', 'fooBar'],
    ['${concat(["first","two"], ["second","list"])}', ['first', 'two', 'second', 'list']],
    ['${concat([1,2,3], [4,5])}', [1, 2, 3, 4, 5]],
    ['${concat("string1", "string2")}', 'string1string2'],
    ['${formatDateUtc("2021-01-01T00:00:00Z", "yyyy-MM-dd")}', '2021-01-01'],
    ['${formatDateUtc("2021-01-01T00:00:00+0200", "yyyy-MM-dd")}', '2020-12-31'],
    ['${formatDateUtc("2021-01-01T00:00:00Z", "yyyy-MM-dd HH:mm:ss")}', '2021-01-01 00:00:00'],
    ['${formatDateUtc("2021-01-01T00:00:00+0200", "yyyy-MM-dd HH:mm:ss")}', '2020-12-31 22:00:00'],
    ['${indent("some: multiline\\nyaml: document", 2)}', '  some: multiline\n  yaml: document'],
    ['${indent("My\\nblock\\nof\\ntext", 4)}', '    My\n    block\n    of\n    text'],
    ['${isEmpty([])}', true],
    ['${isEmpty([1,2,3])}', false],
    ['${isEmpty("")}', true],
    ['${isEmpty("not empty")}', false],
    ['${isEmpty(null)}', true],
    ['${join(["some","list","of","strings"], " ")}', 'some list of strings'],
    ['${join(["some","list","of","strings"], ".")}', 'some.list.of.strings'],
    ['${jsonDecode("{\\"foo\\": \\"bar\\"}")}', { foo: 'bar' }],
    ['${jsonDecode("\\"JSON encoded string\\"")}', 'JSON encoded string'],
    ['${jsonDecode("[\\"my\\", \\"json\\", \\"array\\"]")}', ['my', 'json', 'array']],
    ['${jsonEncode(["some","array"])}', '["some","array"]'],
    ['${kebabCase("Foo Bar")}', 'foo-bar'],
    ['${kebabCase("fooBar")}', 'foo-bar'],
    ['${kebabCase("__FOO_BAR__")}', 'foo-bar'],
    ['${lower("Some String")}', 'some string'],
    ['${modifyDateUtc("2021-01-01T00:00:00.234Z", 345, "milliseconds")}', '2021-01-01T00:00:00.345Z'],
    ['${modifyDateUtc("2021-01-01T00:00:05Z", 30, "seconds")}', '2021-01-01T00:00:30.000Z'],
    ['${modifyDateUtc("2021-01-01T00:01:00Z", 15, "minutes")}', '2021-01-01T00:15:00.000Z'],
    ['${modifyDateUtc("2021-01-01T12:00:00Z", 11, "hours")}', '2021-01-01T11:00:00.000Z'],
    ['${modifyDateUtc("2021-01-01T10:00:00+0200", 11, "hours")}', '2021-01-01T11:00:00.000Z'],
    ['${modifyDateUtc("2021-01-31T00:00:00Z", 1, "days")}', '2021-01-01T00:00:00.000Z'],
    ['${modifyDateUtc("2021-03-01T00:00:00Z", 0, "months")}', '2021-01-01T00:00:00.000Z'],
    ['${modifyDateUtc("2021-01-01T00:00:00Z", 2024, "years")}', '2024-01-01T00:00:00.000Z'],
    ['${range(1, 5)}', [1, 2, 3, 4, 5]],
    ['${replace("string_with_underscores", "_", "-")}', 'string-with-underscores'],
    ['${replace("remove.these.dots", ".", "")}', 'removethesedots'],
    ['${sha256("Some String")}', '7f0fd64653ba0bb1a579ced2b6bf375e916cc60662109ee0c0b24f0a750c3a6c'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", 1, "seconds")}', '2021-01-01T00:00:01.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", -1, "seconds")}', '2020-12-31T23:59:59.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", -1, "minutes")}', '2020-12-31T23:59:00.000Z'],
    ['${shiftDateUtc("2021-01-01T10:00:00+0200", 1, "hours")}', '2021-01-01T09:00:00.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", -1, "days")}', '2020-12-31T00:00:00.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", 1, "months")}', '2021-02-01T00:00:00.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", -1, "months")}', '2020-12-01T00:00:00.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", 1, "years")}', '2022-01-01T00:00:00.000Z'],
    ['${slice("ThisIsALongStringThatINeedAPartOf", 11, -7)}', 'StringThatINeed'],
    ['${slice(".foo", 1)}', 'foo'],
    ['${split("a,b,c", ",")}', ['a', 'b', 'c']],
    ['${split("1:2:3:4", ":")}', ['1', '2', '3', '4']],
    ['${string(1)}', '1'],
    ['${string(true)}', 'true'],
    ['${trim("   some string with surrounding whitespace ")}', 'some string with surrounding whitespace'],
    ['${upper("Some String")}', 'SOME STRING'],
    ['${yamlDecode("a: 1\\nb: 2\\n")}', { a: 1, b: 2 }],
    [
      '${yamlDecode("a: 1\\nb: 2\\n---\\na: 3\\nb: 4\\n", true)}',
      [
        { a: 1, b: 2 },
        { a: 3, b: 4 },
      ],
    ],
    ['${yamlEncode(yamlDecode("my: simple document"))}', 'my: simple document\n'],
  ])('%s', (text, expected) => {
    expect(evaluate(text)).toEqual(expected);
  });
});

describe('helper functions', () => {
  it("has the functions of Garden's reference, and snakeCase", () => {
    expect(Object.keys(helperFunctions).sort()).toEqual(
      [
        'base64Decode',
        'base64Encode',
        'camelCase',
        'concat',
        'formatDateUtc',
        'indent',
        'isEmpty',
        'join',
        'jsonDecode',
        'jsonEncode',
        'kebabCase',
        'lower',
        'modifyDateUtc',
        'range',
        'replace',
        'sha256',
        'shiftDateUtc',
        'slice',
        'snakeCase',
        'split',
        'string',
        'trim',
        'upper',
        'uuidv4',
        'yamlDecode',
        'yamlEncode',
      ].sort(),
    );
  });

  it.each([
    ['${snakeCase("fooBar baz")}', 'foo_bar_baz'],
    ['${kebabCase("XMLHttpRequest")}', 'xml-http-request'],
    ['${trim("--a-b--", "-")}', 'a-b'],
    ['${indent("a\\n\\nb", 2)}', '  a\n\n  b'],
    ['${slice(var.list, -1)}', ['b']],
    ['${slice("abc", "1")}', 'bc'],
    ['${isEmpty()}', true],
    ['${jsonEncode(var.list)}', '["a","b"]'],
    ['${string(var.list)}', '["a","b"]'],
    ['${range(3, 1)}', []],
    [
      '${formatDateUtc("2021-03-04T05:06:07.089Z", "EEEE d MMM yy, h:mm:ss.SSS a \'UTC\'")}',
      'Thursday 4 Mar 21, 5:06:07.089 AM UTC',
    ],
    ['${shiftDateUtc("2021-01-31T00:00:00Z", 1, "months")}', '2021-02-28T00:00:00.000Z'],
    ['${shiftDateUtc("2021-01-01T00:00:00Z", 2, "weeks")}', '2021-01-15T00:00:00.000Z'],
    ['${yamlEncode(yamlDecode("[{a: 1}, {a: 2}]"), true)}', '---a: 1\n---a: 2\n'],
  ])('%s is %j', (text, expected) => {
    expect(evaluate(text)).toEqual(expected);
  });

  it('makes a random v4 UUID', () => {
    const a = evaluate('${uuidv4()}');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(evaluate('${uuidv4()}')).not.toBe(a);
  });

  it.each([
    ['${lower(1)}', 'lower(): argument "string" must be a string (got number 1); usage: lower(string)'],
    ['${join(var.list)}', 'join(): missing argument "separator"; usage: join(input, separator)'],
    ['${upper("a", "b")}', 'upper() takes 1 argument, got 2; usage: upper(string)'],
    [
      '${indent("a", 1.5)}',
      'indent(): argument "spaces" must be a whole number (got number 1.5); usage: indent(string, spaces)',
    ],
    [
      '${join("a,b", ",")}',
      'join(): argument "input" must be a list (got string "a,b"); usage: join(input, separator)',
    ],
    ['${join([[1]], ",")}', 'join(): argument "input" item 0 is not a string, number or boolean'],
    ['${concat("a", ["b"])}', 'concat(): arguments "arg1" and "arg2" must be both lists or both strings'],
    ['${isEmpty(3)}', 'isEmpty(): argument "value" must be a string, list, mapping or null (got number)'],
    ['${jsonDecode("{")}', /^jsonDecode\(\): argument "string" is not JSON: /],
    ['${yamlDecode("a: [")}', /^yamlDecode\(\): argument "string" is not YAML: /],
    [
      '${slice("abc", "x")}',
      'slice(): argument "start" must be a whole number or a numeric string (got "x")',
    ],
    ['${range(1, 1000000)}', 'range(): at most 100000 numbers (asked for 1000000)'],
    [
      '${formatDateUtc("yesterday", "yyyy")}',
      'formatDateUtc(): argument "date" is not a date: "yesterday" (expected e.g. "2021-01-01T00:00:00Z")',
    ],
    [
      '${formatDateUtc("2021-01-01", "yyyy Q")}',
      /^formatDateUtc\(\): argument "format": unsupported letter "Q"/,
    ],
    [
      '${shiftDateUtc("2021-01-01", 1, "fortnights")}',
      'shiftDateUtc(): argument "unit" is "fortnights"; expected one of: years, months, weeks, days, hours, minutes, seconds',
    ],
    ['${yamlEncode("a", true)}', 'yamlEncode(): multiDocument is true but argument "value" is not a list'],
    ['${lowr("A")}', /^unknown function "lowr"; did you mean "lower"\? \(the functions: base64Decode, /],
  ])('refuses %s', (text, message) => {
    const error = functionError(text);
    if (typeof message === 'string') expect(error).toBe(message);
    else expect(error).toMatch(message);
  });

  it('can be called directly', () => {
    expect(callFunction('upper', ['x'])).toBe('X');
  });
});
