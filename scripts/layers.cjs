/**
 * The layers of src/, lowest first: a folder imports only from its own layer and those below it.
 * One list (and one of the server's floors, below), read by .dependency-cruiser.cjs (`npm run
 * deps`, part of `npm test`) and by test/repository/layers.test.ts, which checks that
 * docs/ARCHITECTURE.md#layers shows the same.
 */
const layers = [
  { name: 'base', paths: ['src/[^/]+\\.ts$'], except: ['src/main\\.ts$', 'src/index\\.ts$'] },
  { name: 'state', paths: ['src/state/'] },
  { name: 'cleanup', paths: ['src/cleanup/'] },
  { name: 'api', paths: ['src/api/'] },
  { name: 'events', paths: ['src/events/'] },
  { name: 'outbox', paths: ['src/outbox/'] },
  { name: 'plugin', paths: ['src/plugin/'] },
  // The template language stands alone: the configuration uses it, it knows nothing of configuration.
  { name: 'expressions', paths: ['src/expressions/'] },
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

/**
 * The floors of src/server (the `server` layer), lowest first, ruled the same way: a floor imports
 * only from its own floor and those below it (and from the layers below `server`). A file at the
 * top of src/server sits on the floor of what imports it, or higher if it imports from there.
 */
const serverFloors = [
  { name: 'db', paths: ['src/server/db/'] },
  {
    name: 'domain',
    paths: [
      'src/server/registry/',
      'src/server/cleanup/',
      'src/server/metrics\\.ts$',
      'src/server/periodic\\.ts$',
      'src/server/secret-file\\.ts$',
      'src/server/secrets\\.ts$',
      'src/server/views\\.ts$',
    ],
  },
  {
    name: 'services',
    paths: [
      'src/server/notifications/',
      'src/server/oidc/',
      'src/server/auth\\.ts$',
      'src/server/environment-queries\\.ts$',
      'src/server/services\\.ts$',
    ],
  },
  { name: 'routes', paths: ['src/server/routes/', 'src/server/dashboard/'] },
  {
    name: 'app',
    paths: [
      'src/server/admin-cli\\.ts$',
      'src/server/app\\.ts$',
      'src/server/cli\\.ts$',
      'src/server/first-start\\.ts$',
      'src/server/program\\.ts$',
      'src/server/start\\.ts$',
    ],
  },
];

module.exports = { layers, serverFloors };
