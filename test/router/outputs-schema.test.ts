/**
 * Results are checked like events: what an action handler returns is checked against the kind's
 * declared `outputsSchema`, and a result that does not match fails the call naming the plugin,
 * the handler and the field.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Type } from 'typebox';
import { openProject, startSession } from '../../src/commands/context.js';
import type { ResolvedAction } from '../../src/plugin/types.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = `kind: Project
name: routed
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: routed-dev }]
providers: [{ name: noop }]
---
kind: Build
type: noop
name: a
spec: {}
`;

async function build(outputs: Record<string, string>) {
  const root = makeProject({ 'tend.yml': project });
  const noop = createNoopPlugin();
  const kind = noop.plugin.actionTypes[0]!.kinds.Build!;
  kind.outputsSchema = Type.Object({ image: Type.String({ pattern: '^registry/' }) });
  kind.handlers.build = async () => ({ outputs });
  const opened = await openProject({ root }, [noop.plugin]);
  const s = startSession(opened, 'outputs', []);
  try {
    await s.router.initProviders();
    const action: ResolvedAction = {
      ref: 'build.a',
      kind: 'Build',
      type: 'noop',
      name: 'a',
      version: 'v1',
      sourceDir: root,
      files: [],
      spec: {},
      dependencyOutputs: {},
      dependencyVersions: {},
    };
    return await s.router.callAction(action, 'build', { force: false });
  } finally {
    await s.close({});
  }
}

describe('action results against the output schema', () => {
  it('passes a result whose outputs match', async () => {
    expect(await build({ image: 'registry/app:1' })).toEqual({ outputs: { image: 'registry/app:1' } });
  });

  it('fails a result that does not match, naming the plugin, the handler and the field', async () => {
    await expect(build({ image: 'elsewhere/app:1' })).rejects.toMatchObject({
      code: 'TEND_PLUGIN_INVALID',
      message: expect.stringMatching(
        /^plugin "noop": Build handler "build" of type "noop" returned outputs that do not match its outputsSchema: \/outputs\/image: /,
      ),
    });
  });
});
