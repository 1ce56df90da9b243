// Which Node.js runs tend: the same as `engines` in package.json (^22.19.0 || >=24). 22.19 is
// what undici 8 (@kubernetes/client-node's HTTP client) needs; node:sqlite has everything the
// server uses (StatementSync.columns()) from 22.16.
// Plain CommonJS that any Node parses, checked before the CLI bundle loads, so that an older
// Node gets one line instead of a stack from whatever it fails on first.
'use strict';

/** Why `version` (e.g. "20.20.0") cannot run tend, or undefined when it can. */
function unsupportedNode(version) {
  const [major, minor] = version.split('.').map(Number);
  if (major >= 24 || (major === 22 && minor >= 19)) return undefined;
  return `tend needs Node.js 24, or 22 from 22.19 (this is ${version}): install a current Node.js LTS and run tend with it`;
}

module.exports = { unsupportedNode };
