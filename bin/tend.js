#!/usr/bin/env node
// CommonJS (bin/package.json): from here to the CLI bundle nothing is an ES module, so Node
// starts tend without loading its ES module loader.
const path = require('node:path');
const { unsupportedNode } = require('./supported-node.js');

const unsupported = unsupportedNode(process.versions.node);
if (unsupported) {
  process.stderr.write(`${unsupported}\n`);
  process.exit(2);
}

const { launch } = require('../dist/cli/launch.cjs');

launch({
  bundle: path.join(__dirname, '..', 'dist', 'cli', 'tend.cjs'),
  argv: process.argv,
  env: process.env,
});
