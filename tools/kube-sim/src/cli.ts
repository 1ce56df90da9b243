/** `npm run kube-sim -- --port 0 --kubeconfig <path>`: run the simulator until interrupted. */
import { parseArgs } from 'node:util';
import { startKubeSim } from './index.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'registry-port': { type: 'string', default: '0' },
    kubeconfig: { type: 'string' },
    token: { type: 'string' },
    'namespace-delete-delay-ms': { type: 'string' },
    'deployment-ready-delay-ms': { type: 'string' },
    'pod-start-delay-ms': { type: 'string' },
    'advertise-registry': { type: 'boolean' },
    'seed-namespaces': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help) {
  process.stdout.write(
    'usage: kube-sim [--port N] [--registry-port N] [--kubeconfig PATH] [--token T]\n' +
      '                [--namespace-delete-delay-ms N] [--deployment-ready-delay-ms N] [--pod-start-delay-ms N]\n' +
      '                [--advertise-registry]\n' +
      '                [--seed-namespaces N]   (N namespaces env-00000…, each with a ConfigMap and a Secret)\n',
  );
  process.exit(0);
}

const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));

const sim = await startKubeSim({
  port: Number(values.port),
  registryPort: Number(values['registry-port']),
  ...(values.token ? { token: values.token } : {}),
  ...(values['namespace-delete-delay-ms']
    ? { namespaceDeleteDelayMs: num(values['namespace-delete-delay-ms'])! }
    : {}),
  ...(values['deployment-ready-delay-ms']
    ? { deploymentReadyDelayMs: num(values['deployment-ready-delay-ms'])! }
    : {}),
  ...(values['pod-start-delay-ms'] ? { podStartDelayMs: num(values['pod-start-delay-ms'])! } : {}),
  ...(values['advertise-registry'] ? { advertiseRegistry: true } : {}),
});
const seed = Number(values['seed-namespaces'] ?? 0);
for (let i = 0; i < seed; i++) {
  const ns = `env-${String(i).padStart(5, '0')}`;
  sim.store.create('namespaces', '', {
    metadata: { name: ns, labels: { 'tend.dev/managed': 'true', 'tend.dev/env': i % 2 ? 'pr' : 'dev' } },
  });
  sim.store.create('configmaps', ns, { metadata: { name: 'tend-environment' }, data: { id: String(i) } });
  sim.store.create('secrets', ns, { metadata: { name: 'registry' }, data: { token: 'eA==' } });
}
// The namespace controller adds each namespace's ServiceAccount and root CA ConfigMap.
while (sim.store.count('serviceaccounts') < seed) await new Promise((r) => setImmediate(r));
if (values.kubeconfig) await sim.writeKubeconfig(values.kubeconfig);
process.stdout.write(`${sim.url}\n`);
process.stderr.write(
  `kube-sim: API ${sim.url}, registry ${sim.registryUrl}${values.kubeconfig ? `, kubeconfig ${values.kubeconfig}` : ''}\n`,
);

let stopping = false;
const shutdown = (): void => {
  if (stopping) return;
  stopping = true;
  void sim.stop().then(() => process.exit(0));
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
