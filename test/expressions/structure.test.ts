/*
 * The examples marked "Garden's" follow Garden's documentation
 * (docs/features/variables-and-templating.md, https://github.com/garden-io/garden), which is
 * licensed under the Mozilla Public License 2.0 (https://mozilla.org/MPL/2.0/).
 */
import { describe, expect, it } from 'vitest';
import { TendError } from '../../src/errors.js';
import type { SourceLocation } from '../../src/errors.js';
import type { ConfigPath } from '../../src/config/project.js';
import { resolveTemplates } from '../../src/config/template.js';
import type { TemplateContext } from '../../src/config/template.js';
import { parse } from 'yaml';

const context = (variables: Record<string, unknown>): TemplateContext => ({
  project: { name: 'shop' },
  environment: { name: 'dev', namespace: 'shop-dev' },
  var: variables,
  local: { username: 'alice', env: {} },
});

const locate = (path: ConfigPath): SourceLocation => ({ file: `at:${path.join('.')}`, line: 1, column: 1 });

const resolve = (yamlText: string, variables: Record<string, unknown> = {}) =>
  resolveTemplates(parse(yamlText), context(variables), locate);

function errorOf(fn: () => unknown): TendError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TendError) return error;
    throw error;
  }
  throw new Error('expected an error');
}

describe("Garden's structural operators", () => {
  it('$if/$then/$else chooses a value; without $else and false, the key is left out', () => {
    const spec = `
      command:
        $if: \${environment.name == "dev"}
        $then: [npm, run, watch]
        $else: [npm, start]
      args:
        $if: \${environment.name == "prod"}
        $then: [--prod]
    `;
    expect(resolve(spec)).toEqual({ command: ['npm', 'run', 'watch'] });
  });

  it('$concat splices lists into a list', () => {
    const spec = `
      args:
        - $concat: \${var.commonArgs}
        - suite-a
        - $concat: [x, y]
    `;
    expect(resolve(spec, { commonArgs: ['npm', 'test', '-g'] })).toEqual({
      args: ['npm', 'test', '-g', 'suite-a', 'x', 'y'],
    });
  });

  it('$merge merges a mapping where it stands: later keys win', () => {
    const common = { LOG_LEVEL: 'info', SOME_API_KEY: 'abcdefg' };
    expect(
      resolve(
        `
      a:
        $merge: \${var.commonEnvVars}
        OTHER: something
        LOG_LEVEL: debug
      b:
        SOME_API_KEY: default
        $merge: \${var.commonEnvVars}
    `,
        { commonEnvVars: common },
      ),
    ).toEqual({
      a: { LOG_LEVEL: 'debug', SOME_API_KEY: 'abcdefg', OTHER: 'something' },
      b: { SOME_API_KEY: 'abcdefg', LOG_LEVEL: 'info' },
    });
  });

  it('$forEach maps a list, with $filter and ${item.key}/${item.value}', () => {
    expect(
      resolve(
        `
      args:
        $forEach: \${var.values}
        $return: \${kebabCase(item.value)}
      ports:
        $forEach: \${var.ports}
        $filter: \${item.value > 1000}
        $return:
          name: port-\${item.key}
          containerPort: \${item.value}
    `,
        { values: ['some_name', 'AnotherName', '__YET_ANOTHER_NAME__'], ports: [80, 8000, 8100] },
      ),
    ).toEqual({
      args: ['some-name', 'another-name', 'yet-another-name'],
      ports: [
        { name: 'port-1', containerPort: 8000 },
        { name: 'port-2', containerPort: 8100 },
      ],
    });
  });

  it('$forEach maps a mapping by key', () => {
    expect(
      resolve(
        `
      ports:
        $forEach: \${var.ports}
        $return:
          name: \${item.key}
          containerPort: \${item.value.container}
          servicePort: \${item.value.service || item.value.container}
    `,
        { ports: { http: { container: 8000, service: 80 }, admin: { container: 8100 } } },
      ),
    ).toEqual({
      ports: [
        { name: 'http', containerPort: 8000, servicePort: 80 },
        { name: 'admin', containerPort: 8100, servicePort: 8100 },
      ],
    });
  });

  it('leaves out a key whose optional value ("${…}?") is missing', () => {
    expect(resolve('kubeconfig: ${var.kubeconfig}?\nother: 1')).toEqual({ other: 1 });
    expect(resolve('kubeconfig: ${var.kubeconfig}?', { kubeconfig: '/k' })).toEqual({ kubeconfig: '/k' });
  });

  it.each([
    ['x: { $if: "${1}", $then: a }', 'at:x.$if', '$if needs true or false (got number)'],
    ['x: { $if: true }', 'at:x', '$if needs a $then next to it'],
    [
      'x: { $if: true, $then: a, other: b }',
      'at:x',
      'unexpected key "other" next to $if; allowed: $if, $then, $else',
    ],
    ['x: [{ $concat: a }]', 'at:x.0.$concat', '$concat needs a list (got string)'],
    ['x: [{ $concat: [a], b: c }]', 'at:x.0', 'unexpected key "b" next to $concat; allowed: $concat'],
    ['x: { $merge: [a] }', 'at:x.$merge', '$merge needs a mapping (got list)'],
    ['x: { $forEach: 3, $return: a }', 'at:x.$forEach', '$forEach needs a list or a mapping (got number)'],
    ['x: { $forEach: [1] }', 'at:x', '$forEach needs a $return next to it'],
    [
      'x: { $forEach: [1], $filter: "${item.value}", $return: a }',
      'at:x.$filter',
      '$filter needs true or false (got number)',
    ],
  ])('refuses %s', (spec, file, message) => {
    const error = errorOf(() => resolve(spec));
    expect(error.code).toBe('TEND_TEMPLATE');
    expect(error.message).toBe(message);
    expect(error.location?.file).toBe(file);
  });
});
