/**
 * client-node's streaming clients — container logs (node-fetch) and exec and attach (WebSockets,
 * `ws`) — imported by connection.ts on the first log, exec or attach, so that a command that makes
 * only API requests (`tend status`, a cached deploy) loads neither. By module path, like library.ts.
 */
export { Attach } from '@kubernetes/client-node/dist/attach.js';
export { Exec } from '@kubernetes/client-node/dist/exec.js';
export { Log } from '@kubernetes/client-node/dist/log.js';
