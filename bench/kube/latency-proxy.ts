/**
 * A TCP proxy that delays every chunk by a fixed time in each direction, for the Kubernetes
 * commands against a cluster that is not on the same machine (bench/kube-commands.ts): TCP and
 * TLS handshakes and every request pay the round trip, as they do against a real API server.
 * A process of its own: the bench waits for each command with spawnSync, which would stop a proxy
 * in its own event loop. Usage: `latency-proxy.ts <upstream host:port> <ms each way>`; prints
 * `listening <port>` once it accepts connections, and runs until killed.
 */
import net from 'node:net';

const [upstream, delayArg] = process.argv.slice(2);
const match = /^(.+):(\d+)$/.exec(upstream ?? '');
const delayMs = Number(delayArg);
if (!match || !Number.isFinite(delayMs) || delayMs < 0) {
  process.stderr.write('usage: latency-proxy.ts <upstream host:port> <ms each way>\n');
  process.exit(2);
}
const [, host, port] = match;

/** Copies `from` to `to`, each chunk `delayMs` later, in order; ends `to` after the last. */
function delayedPipe(from: net.Socket, to: net.Socket): void {
  from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
  from.on('end', () => setTimeout(() => to.end(), delayMs));
  from.on('error', () => to.destroy());
}

const server = net.createServer((client) => {
  const cluster = net.connect(Number(port), host!);
  delayedPipe(client, cluster);
  delayedPipe(cluster, client);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as net.AddressInfo).port}\n`);
});
