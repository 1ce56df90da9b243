// "Builds" the service: copies it into dist/ with a build stamp, and reports the entry point.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

const stamp = process.env.TEND_ACTION_VERSION ?? 'dev';
mkdirSync('dist', { recursive: true });
const source = readFileSync('server.js', 'utf8');
writeFileSync('dist/server.js', `process.env.SHOP_BUILD ??= ${JSON.stringify(stamp)};\n${source}`);
console.log(`built dist/server.js (${stamp})`);
console.log(`::output entry=${process.cwd()}/dist/server.js`);
