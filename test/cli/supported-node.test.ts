/**
 * Which Node.js runs tend (bin/supported-node.js): Node 24 and later, and 22 from 22.19 (what
 * undici 8, @kubernetes/client-node's HTTP client, needs), as `engines` says. On any other Node,
 * `bin/tend.js` exits 2 with one line naming the versions, before the CLI bundle loads: checked
 * with the machine's own node (scripts/node-line.sh), Node 20 on the development machines.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tendBin } from '../helpers/project.js';

const require = createRequire(import.meta.url);
const { unsupportedNode } = require('../../bin/supported-node.js') as {
  unsupportedNode: (version: string) => string | undefined;
};

describe('the Node.js versions tend runs on', () => {
  it('takes 22 from 22.19 and 24 onwards, as engines says, and refuses the rest', () => {
    const engines = (require('../../package.json') as { engines: { node: string } }).engines.node;
    expect(engines).toBe('^22.19.0 || >=24');
    for (const version of ['22.19.0', '22.23.5', '24.0.0', '24.22.3', '26.1.0']) {
      expect(unsupportedNode(version), version).toBeUndefined();
    }
    for (const version of ['18.20.8', '20.20.2', '21.7.3', '22.18.0', '23.11.0']) {
      expect(unsupportedNode(version), version).toBe(
        `tend needs Node.js 24, or 22 from 22.19 (this is ${version}): install a current Node.js LTS and run tend with it`,
      );
    }
  });

  it("on the machine's own node: one line and exit 2 when it is too old, else tend runs", () => {
    const bin = execFileSync('bash', [path.join(repoRoot, 'scripts', 'node-line.sh'), 'bin', 'system'], {
      encoding: 'utf8',
    }).trim();
    const node = path.join(bin, 'node');
    const version = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
    const run = spawnSync(node, [tendBin, '--version'], { encoding: 'utf8' });
    const refusal = unsupportedNode(version);
    if (refusal) {
      expect(run.status).toBe(2);
      expect(run.stderr).toBe(`${refusal}\n`);
      expect(run.stdout).toBe('');
    } else {
      expect(run.status, run.stderr).toBe(0);
    }
  });
});
