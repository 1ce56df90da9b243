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
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help) {
  process.stdout.write(
    'usage: kube-sim [--port N] [--registry-port N] [--kubeconfig PATH] [--token T]\n' +
      '                [--namespace-delete-delay-ms N] [--deployment-ready-delay-ms N] [--pod-start-delay-ms N]\n',
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
});
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
