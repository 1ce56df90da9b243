/**
 * A Node built-in module loaded where it is first used rather than when tend starts. A static
 * import of `node:http`, `node:https` or `node:child_process` loads it (and `net`, `tls`,
 * `dgram`…) in every command, a cached `tend build` included, which uses none of them: ~10 ms
 * of each start. Types come from `import type`.
 */
import { createRequire } from 'node:module';

let require: NodeJS.Require | undefined;

export function builtinModule<T>(id: `node:${string}`): T {
  // process.getBuiltinModule came in Node 20.16; a require works anywhere for a built-in.
  return (process.getBuiltinModule?.(id) ?? (require ??= createRequire('/'))(id)) as T;
}
