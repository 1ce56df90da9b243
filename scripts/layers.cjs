/**
 * The layers of src/, lowest first: a folder imports only from its own layer and those below it.
 * One list, read by .dependency-cruiser.cjs (`npm run deps`, part of `npm test`) and by
 * test/repository/layers.test.ts, which checks that docs/ARCHITECTURE.md#layers shows the same.
 */
const layers = [
  { name: 'base', paths: ['src/[^/]+\\.ts$'], except: ['src/main\\.ts$', 'src/index\\.ts$'] },
  { name: 'state', paths: ['src/state/'] },
  { name: 'cleanup', paths: ['src/cleanup/'] },
  { name: 'api', paths: ['src/api/'] },
  { name: 'events', paths: ['src/events/'] },
  { name: 'outbox', paths: ['src/outbox/'] },
  { name: 'plugin', paths: ['src/plugin/'] },
  { name: 'config', paths: ['src/config/'] },
  { name: 'plugins', paths: ['src/plugins/'] },
  { name: 'router', paths: ['src/router/'] },
  { name: 'graph', paths: ['src/graph/'] },
  { name: 'remote', paths: ['src/remote/'] },
  { name: 'stream', paths: ['src/stream/'] },
  { name: 'session', paths: ['src/session/'] },
  { name: 'executor', paths: ['src/executor/'] },
  { name: 'cli', paths: ['src/cli/'] },
  // The two programs: side by side, neither imports the other.
  { name: 'commands', paths: ['src/commands/'], sibling: 'server' },
  { name: 'server', paths: ['src/server/'], sibling: 'commands' },
  { name: 'testing', paths: ['src/testing/'] },
  { name: 'entry', paths: ['src/main\\.ts$', 'src/index\\.ts$'] },
];

module.exports = { layers };
