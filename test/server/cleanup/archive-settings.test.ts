/** The archive flags and the restore's `--into`: bad values are usage errors naming the flag (exit 2), nothing started. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { archiveSettingsOf } from '../../../src/server/cli.js';
import { makeProject, runTend } from '../../helpers/project.js';

it('--archive-retention, --archive-max-size and --archive-key-file are checked', () => {
  expect(archiveSettingsOf({})).toEqual({ retentionMs: 7 * 86_400_000, maxBytes: 8 * 1_048_576 });
  expect(archiveSettingsOf({ archiveRetention: '365d', archiveMaxSize: 64 }).maxBytes).toBe(64 * 1_048_576);
  for (const [options, message] of [
    [{ archiveRetention: '366d' }, /--archive-retention expects a duration from 1m to 365d: .*got "366d"/],
    [{ archiveRetention: '30s' }, /--archive-retention expects a duration from 1m to 365d/],
    [{ archiveRetention: '7 days' }, /got "7 days"/],
    [{ archiveMaxSize: 0 }, /--archive-max-size expects a whole number of MiB from 1 to 1024, got "0"/],
    [{ archiveMaxSize: 1.5 }, /--archive-max-size expects/],
    [{ archiveKeyFile: '/nonexistent/key' }, /--archive-key-file: cannot read \/nonexistent\/key/],
  ] as const) {
    expect(() => archiveSettingsOf(options)).toThrow(message);
  }
  const dir = makeProject({});
  const short = path.join(dir, 'short.key');
  writeFileSync(short, 'abcd\n');
  expect(() => archiveSettingsOf({ archiveKeyFile: short })).toThrow(
    /must hold a 32-byte key: 64 hex digits \(generate one with `openssl rand -hex 32`\)/,
  );
  const good = path.join(dir, 'good.key');
  writeFileSync(good, `${'ab'.repeat(32)}\n`);
  const key = archiveSettingsOf({ archiveKeyFile: good }).key!;
  expect(key.key).toHaveLength(32);
  expect(key.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
});

it('tend server refuses a bad --archive-retention, and tend restore a bad --into, with exit 2 before anything starts', async () => {
  const server = await runTend(['server', '--port', '0', '--archive-retention', '2y']);
  expect(server.code).toBe(2);
  expect(server.stderr).toMatch(/--archive-retention expects a duration from 1m to 365d/);
  const restore = await runTend(['restore', '01J0000000000000000000000', '--into', 'Not_A_Namespace'], {
    env: { TEND_SERVER_URL: 'http://127.0.0.1:1', TEND_TOKEN: 't' },
  });
  expect(restore.code).toBe(2);
  expect(restore.stderr).toMatch(/--into expects a namespace name: .*got "Not_A_Namespace"/);
});
