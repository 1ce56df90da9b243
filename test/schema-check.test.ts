/**
 * src/schema-check.ts: a schema is interpreted for its first checks and compiled after
 * `compileAfterChecks`; the answer and the errors are the same either way.
 */
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { InventoryItem } from '../src/cleanup/protocol.js';
import {
  AnyKey,
  compileAfterChecks,
  schemaCheck,
  schemaProblems,
  weightOfJson,
} from '../src/schema-check.js';

const Spec = Type.Object(
  {
    image: Type.String({ minLength: 1 }),
    replicas: Type.Optional(Type.Integer({ minimum: 0 })),
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: false },
);

const values: unknown[] = [
  { image: 'alpine' },
  { image: 'alpine', replicas: 2, env: { MODE: 'ci' } },
  { image: '' },
  { image: 'alpine', replicas: -1 },
  { image: 'alpine', unknown: true },
  { replicas: 1.5, env: { MODE: 1 } },
  'not an object',
  null,
];

const answers = (check: ReturnType<typeof schemaCheck>) =>
  values.map((value) => ({
    valid: check.Check(value),
    errors: check
      .Errors(value)
      .map((e) => ({ path: e.instancePath, keyword: e.keyword, message: e.message })),
    problems: schemaProblems(check.Errors(value)),
  }));

describe('schemaCheck', () => {
  it('gives the same answers and errors before and after the schema is compiled', () => {
    const check = schemaCheck(Spec);
    expect(schemaCheck(Spec)).toBe(check);
    const interpreted = answers(check);
    expect(interpreted.map((a) => a.valid)).toEqual([true, true, false, false, false, false, false, false]);
    expect(interpreted[4]!.problems.map((e) => e.path)).toEqual(['/unknown']);
    for (let i = 0; i < compileAfterChecks; i++) check.Check(values[0]);
    expect(answers(check)).toEqual(interpreted);
  });

  it('gives the same answers to a check that stands for many (a whole file: compiled at once)', () => {
    const Record = Type.Object({ specs: Type.Array(Spec) });
    const interpreted = values.map((value) => schemaCheck(Record).Check({ specs: [value] }));
    const heavy = Type.Object({ specs: Type.Array(Spec) });
    expect(
      values.map((value) => schemaCheck(heavy).Check({ specs: [value] }, compileAfterChecks + 1)),
    ).toEqual(interpreted);
    expect(interpreted).toEqual([true, true, false, false, false, false, false, false]);
    expect(schemaCheck(heavy).compiled).toBe(true);
    expect(weightOfJson('x'.repeat(129))).toBe(2);
  });

  it('compiles once the checks it interpreted weigh more than compileAfterChecks, not before', () => {
    const check = schemaCheck(Type.Object({ n: Type.Integer() }));
    for (let i = 0; i < compileAfterChecks; i++) check.Check({ n: i });
    expect(check.compiled).toBe(false);
    check.Check({ n: 0 });
    expect(check.compiled).toBe(true);
    const file = schemaCheck(Type.Object({ m: Type.Integer() }));
    file.Check({ m: 1 }, weightOfJson('x'.repeat(128 * compileAfterChecks)));
    expect(file.compiled).toBe(false);
    file.Check({ m: 1 }, 1);
    expect(file.compiled).toBe(true);
  });
});

describe('schemaProblems', () => {
  it('names every unknown key even when the validator stopped after its first errors, and cuts a hostile key to 64 characters', () => {
    const value: Record<string, unknown> = { image: 'alpine' };
    for (let i = 0; i < 12; i++) value[`k${i}`] = i;
    value['x'.repeat(100_000)] = 1;
    const problems = schemaProblems(schemaCheck(Spec).Errors(value), 20);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((p) => p.message === 'unknown property')).toBe(true);
    expect(problems[0]).toEqual({ path: '/k0', message: 'unknown property' });
    expect(Math.max(...problems.map((p) => p.path.length))).toBeLessThanOrEqual(65);
  });

  it('is never empty for a failed check', () => {
    const value = {
      image: '',
      replicas: -1,
      ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`u${i}`, 1])),
    };
    expect(schemaCheck(Spec).Check(value)).toBe(false);
    expect(schemaProblems(schemaCheck(Spec).Errors(value)).length).toBeGreaterThan(0);
  });
});

describe('AnyKey', () => {
  it('checks the value of a key with a line break (TypeBox writes a string key as ^.*$, which misses it)', () => {
    const item = {
      namespaceName: 'shop-alice',
      uid: 'u1',
      version: '1',
      state: 'active',
      managedByTend: true,
      adopted: false,
      detail: { 'a\nb': 'x'.repeat(5000) },
    };
    expect(schemaCheck(InventoryItem).Check(item)).toBe(false);
    expect(schemaCheck(InventoryItem).Check({ ...item, detail: { 'a\nb': 'short' } })).toBe(true);
    expect(schemaCheck(Type.Record(AnyKey(), Type.String())).Check({ '\u2028': 1 })).toBe(false);
  });
});
