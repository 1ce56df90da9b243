import { describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import type { PluginDefinition } from '../../src/plugin/types.js';
import { validatePlugins } from '../../src/plugin/validate.js';
import { createNoopPlugin } from '../fixtures/noop-plugin.js';

function variant(change: (plugin: PluginDefinition) => PluginDefinition): PluginDefinition {
  return change(createNoopPlugin().plugin);
}

describe('plugin registration', () => {
  it('accepts the built-in plugins', () => {
    expect(() => validatePlugins(builtinPlugins())).not.toThrow();
  });

  it.each([
    [
      'an unknown event type',
      (p: PluginDefinition) => ({ ...p, emits: ['log', 'nope'] as never }),
      /unknown event type "nope"/,
    ],
    [
      'a missing provider handler',
      (p: PluginDefinition) => ({
        ...p,
        provider: { ...p.provider, cleanupEnvironment: undefined as never },
      }),
      /provider handler "cleanupEnvironment" is missing/,
    ],
    [
      'a cleanup part without a delete primitive',
      (p: PluginDefinition) => ({
        ...p,
        cleanup: {
          targets: async () => [],
          inventory: async () => ({ complete: true, items: [] }),
          read: async () => undefined,
        } as never,
      }),
      /cleanup handler "delete" is missing/,
    ],
    [
      'a cleanup part with checks of its own instead of the framework’s',
      (p: PluginDefinition) => ({
        ...p,
        cleanup: {
          targetKind: 'own-checks',
          settingsSchema: {},
          targets: async () => [],
          inventory: async () => ({ complete: true, items: [] }),
          read: async () => undefined,
          delete: async () => ({ outcome: 'done', message: 'deleted' }),
          verifyAndClean: async () => ({ outcome: 'done', message: 'deleted, unchecked' }),
        } as never,
      }),
      /cleanup\.verifyAndClean is tend’s own/,
    ],
    [
      'a missing action handler',
      (p: PluginDefinition) => {
        const build = p.actionTypes[0]!.kinds.Build!;
        return {
          ...p,
          actionTypes: [
            {
              ...p.actionTypes[0]!,
              kinds: { Build: { ...build, handlers: { getStatus: build.handlers.getStatus } as never } },
            },
          ],
        };
      },
      /Build handlers of type "noop": missing build/,
    ],
    [
      'an unknown action handler',
      (p: PluginDefinition) => {
        const run = p.actionTypes[0]!.kinds.Run!;
        return {
          ...p,
          actionTypes: [
            {
              ...p.actionTypes[0]!,
              kinds: { Run: { ...run, handlers: { ...run.handlers, deploy: run.handlers.run } as never } },
            },
          ],
        };
      },
      /unknown deploy/,
    ],
    [
      'a versionInputs that is not a function',
      (p: PluginDefinition) => {
        const build = p.actionTypes[0]!.kinds.Build!;
        return {
          ...p,
          actionTypes: [
            { ...p.actionTypes[0]!, kinds: { Build: { ...build, versionInputs: 'k8s/*.yaml' as never } } },
          ],
        };
      },
      /Build "versionInputs" of action type "noop" is not a function/,
    ],
    [
      'a checkAction that is not a function',
      (p: PluginDefinition) => {
        const build = p.actionTypes[0]!.kinds.Build!;
        return {
          ...p,
          actionTypes: [{ ...p.actionTypes[0]!, kinds: { Build: { ...build, checkAction: true as never } } }],
        };
      },
      /Build "checkAction" of action type "noop" is not a function/,
    ],
    [
      'a checkEnvironment that is not a function',
      (p: PluginDefinition) => ({ ...p, checkEnvironment: [] as never }),
      /plugin "noop": "checkEnvironment" is not a function/,
    ],
    [
      "an event type in another plugin's namespace",
      (p: PluginDefinition) =>
        ({
          ...p,
          eventTypes: [{ name: 'buckets.created', payloadSchema: { type: 'object' }, streamed: true }],
        }) as unknown as PluginDefinition,
      /in the namespace of plugin "buckets"/,
    ],
    [
      "an event type without its plugin's namespace",
      (p: PluginDefinition) =>
        ({
          ...p,
          eventTypes: [{ name: 'created', payloadSchema: { type: 'object' }, streamed: true }],
        }) as unknown as PluginDefinition,
      /must be "noop.<name>"/,
    ],
    [
      "a core event type's name",
      (p: PluginDefinition) =>
        ({
          ...p,
          eventTypes: [{ name: 'namespaceStatus', payloadSchema: { type: 'object' }, streamed: true }],
        }) as unknown as PluginDefinition,
      /core event type/,
    ],
    [
      'an event type name with a NUL',
      (p: PluginDefinition) =>
        ({
          ...p,
          eventTypes: [{ name: 'noop.a\u0000b', payloadSchema: { type: 'object' }, streamed: true }],
        }) as unknown as PluginDefinition,
      /event type/,
    ],
    [
      'an event type name with a lone surrogate',
      (p: PluginDefinition) =>
        ({
          ...p,
          eventTypes: [{ name: 'noop.a\ud800', payloadSchema: { type: 'object' }, streamed: true }],
        }) as unknown as PluginDefinition,
      /event type/,
    ],
  ])('rejects %s with a coded error naming the plugin', (_what, change, message) => {
    const error = (() => {
      try {
        validatePlugins([variant(change)]);
      } catch (e) {
        return e as { code: string; message: string };
      }
      return undefined;
    })();
    expect(error?.code).toBe('TEND_PLUGIN_INVALID');
    expect(error?.message).toMatch(/plugin "noop"/);
    expect(error?.message).toMatch(message);
  });

  it('accepts the optional Deploy.getLogs, and names it among the expected handlers of a typo', () => {
    const withLogs = (name: string) =>
      variant((p) => {
        const deploy = p.actionTypes[0]!.kinds.Deploy!;
        const handlers = { ...deploy.handlers, [name]: async () => undefined };
        return {
          ...p,
          actionTypes: [{ ...p.actionTypes[0]!, kinds: { Deploy: { ...deploy, handlers } as never } }],
        };
      });
    expect(() => validatePlugins([withLogs('getLogs')])).not.toThrow();
    expect(() => validatePlugins([withLogs('getLog')])).toThrow(
      /unknown getLog \(expected getStatus, deploy, delete, getLogs\?\)/,
    );
  });

  it('rejects two plugins providing the same action type', () => {
    expect(() =>
      validatePlugins([createNoopPlugin().plugin, { ...createNoopPlugin().plugin, name: 'other' }]),
    ).toThrow(/action type "noop" is already provided by plugin "noop"/);
  });
});
