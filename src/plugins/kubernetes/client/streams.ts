/**
 * client-node's WebSocket clients for exec and attach (`ws`), imported by connection.ts on the
 * first exec or attach, so that a command that makes only API requests (`tend status`, a cached
 * deploy) loads neither. By module path, like library.ts. Container logs are a plain streamed GET
 * (connection.ts `stream`).
 */
export { Attach } from '@kubernetes/client-node/dist/attach.js';
export { Exec } from '@kubernetes/client-node/dist/exec.js';
