import type { PluginContract } from './types.js';

const project = `kind: Project
name: contract
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: contract-dev
providers:
  - name: exec
---
kind: Build
type: exec
name: b
spec: { command: ["true"] }
---
kind: Deploy
type: exec
name: d
spec: { command: ["true"] }
---
kind: Test
type: exec
name: t
spec: { command: ["true"] }
---
kind: Run
type: exec
name: r
spec: { command: ["true"] }
`;

const ready = (cause: 'created' | 'observed') =>
  ({ namespace: 'app', state: 'ready', cause, role: 'app' }) as const;
const missing = (cause: 'observed' | 'deleted') =>
  ({ namespace: 'app', state: 'missing', cause, role: 'app' }) as const;

export const execContract: PluginContract = {
  plugin: 'exec',
  executor: (recorded) => ({
    flags: { local: true, contexts: [], clustersByDefault: false },
    hostId: recorded.target.kind === 'local' ? recorded.target.hostId : undefined,
  }),
  fixtures: async () => ({ default: { files: { 'tend.yml': project } } }),
  rows: [
    // init only reads configuration: it touches no environment.
    { handler: 'provider.init', given: 'fresh', expect: [] },
    { handler: 'provider.getEnvironmentStatus', given: 'fresh', expect: [missing('observed')] },
    { handler: 'provider.getEnvironmentStatus', given: 'prepared', expect: [ready('observed')] },
    { handler: 'provider.prepareEnvironment', given: 'fresh', expect: [ready('created')] },
    { handler: 'provider.prepareEnvironment', given: 'prepared', expect: [ready('observed')] },
    { handler: 'provider.cleanupEnvironment', given: 'prepared', expect: [missing('deleted')] },
    { handler: 'Build.exec.getStatus', action: 'build.b', given: 'fresh', expect: [missing('observed')] },
    { handler: 'Build.exec.build', action: 'build.b', given: 'fresh', expect: [ready('created')] },
    { handler: 'Build.exec.build', action: 'build.b', given: 'prepared', expect: [ready('observed')] },
    { handler: 'Deploy.exec.getStatus', action: 'deploy.d', given: 'prepared', expect: [ready('observed')] },
    { handler: 'Deploy.exec.deploy', action: 'deploy.d', given: 'fresh', expect: [ready('created')] },
    { handler: 'Deploy.exec.delete', action: 'deploy.d', given: 'prepared', expect: [ready('observed')] },
    { handler: 'Deploy.exec.getLogs', action: 'deploy.d', given: 'fresh', expect: [missing('observed')] },
    { handler: 'Deploy.exec.getLogs', action: 'deploy.d', given: 'prepared', expect: [ready('observed')] },
    { handler: 'Test.exec.getResult', action: 'test.t', given: 'fresh', expect: [missing('observed')] },
    { handler: 'Test.exec.run', action: 'test.t', given: 'fresh', expect: [ready('created')] },
    { handler: 'Run.exec.getResult', action: 'run.r', given: 'prepared', expect: [ready('observed')] },
    { handler: 'Run.exec.run', action: 'run.r', given: 'prepared', expect: [ready('observed')] },
  ],
};
