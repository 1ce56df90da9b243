/**
 * Peak memory of one graph run in a process of its own (the figure is not inflated by the other
 * benchmarks): `tsx bench/graph-peak.ts <actions>` prints `{"actions", "maxRssMb", "baselineMb"}`.
 */
import { executeCommand } from '../src/commands/execute.js';
import { createNoopPlugin } from '../test/fixtures/noop-plugin.js';
import { projectFiles } from './graph.js';
import { tempProject } from './support.js';

const actions = Number(process.argv[2] ?? 5000);
const baselineMb = process.resourceUsage().maxRSS / 1024;
const project = tempProject(projectFiles(actions));
process.stderr.write = (() => true) as typeof process.stderr.write;
await executeCommand('build', [], { root: project.root }, [createNoopPlugin().plugin]);
project.remove();
process.stdout.write(
  JSON.stringify({ actions, maxRssMb: process.resourceUsage().maxRSS / 1024, baselineMb }) + '\n',
);
