/** The agent's line per pass names what each target listed in its plugin's word. */
import { describe, expect, it } from 'vitest';
import { describePass } from '../../src/commands/agent.js';
import type { PassReport } from '../../src/executor/executor.js';

const report = (pluginName: string, items: number, complete = true) =>
  ({
    targets: [{ targetKey: `${pluginName}/t1`, pluginName, description: `the ${pluginName} place` }],
    inventories: [
      { targetKey: `${pluginName}/t1`, items, complete, ...(complete ? {} : { error: 'cut short' }) },
    ],
    jobs: [{ outcome: 'done' }],
    errors: [],
  }) as unknown as PassReport;

describe('describePass', () => {
  const words: Record<string, string> = { kubernetes: 'namespace', dirs: 'directory', buckets: 'bucket' };
  it.each([
    ['kubernetes', 'namespaces'],
    ['dirs', 'directories'],
    ['buckets', 'buckets'],
    ['unknown', 'resources'],
  ])('%s: its resources as %s', (plugin, plural) => {
    const line = describePass(report(plugin, 3), (name) => words[name] ?? 'resource');
    expect(line).toContain(`: 3 ${plural}; 1 done`);
  });

  it('without words, resources; an incomplete list says why', () => {
    expect(describePass(report('dirs', 0, false))).toContain(': 0 resources (incomplete: cut short); 1 done');
  });
});
