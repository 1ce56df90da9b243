#!/usr/bin/env node
import { fileURLToPath } from 'node:url';
import { launch } from '../dist/src/cli/launch.js';

launch({
  bundle: fileURLToPath(new URL('../dist/cli/tend.cjs', import.meta.url)),
  argv: process.argv,
  env: process.env,
});
