/**
 * docs/configuration.md's reference of every action type's `spec` is generated from the spec
 * schemas: this test fails when the page and the schemas drift apart. `UPDATE_DOCS=1` rewrites
 * the generated part of the page.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  renderSpecReference,
  specReferenceEnd,
  specReferenceStart,
  undocumentedSpecKeys,
} from '../../src/config/reference.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { repoRoot } from '../helpers/project.js';

const page = path.join(repoRoot, 'docs', 'configuration.md');

describe('the spec reference in docs/configuration.md', () => {
  it('is what the spec schemas generate', () => {
    const text = readFileSync(page, 'utf8');
    const start = text.indexOf(specReferenceStart);
    const end = text.indexOf(specReferenceEnd);
    expect(start, `docs/configuration.md has no line ${specReferenceStart}`).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    const current = text.slice(start, end + specReferenceEnd.length);
    const generated = renderSpecReference(builtinPlugins());
    if (process.env.UPDATE_DOCS === '1' && current !== generated) {
      writeFileSync(page, text.slice(0, start) + generated + text.slice(end + specReferenceEnd.length));
      return;
    }
    expect(
      current,
      'docs/configuration.md is out of date: run UPDATE_DOCS=1 npx vitest run ' +
        'test/config/spec-reference.test.ts',
    ).toBe(generated);
  });

  it('describes every key of every spec', () => {
    expect(undocumentedSpecKeys(builtinPlugins())).toEqual([]);
  });

  it('lists every action type and kind', () => {
    const generated = renderSpecReference(builtinPlugins());
    for (const plugin of builtinPlugins()) {
      for (const type of plugin.actionTypes) {
        expect(generated).toContain(`### Type \`${type.name}\``);
        for (const kind of Object.keys(type.kinds))
          expect(generated).toMatch(new RegExp(`\`spec\` of [^:]*${kind}`));
      }
    }
  });
});
