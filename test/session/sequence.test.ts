/**
 * The host's event sequence: numbers only grow, each is taken once even by processes racing for
 * it, the sessions of a host stamp them on the events whose order matters, and a counter that
 * cannot be used leaves events without one instead of failing the command.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SessionBus } from '../../src/events/bus.js';
import { HostSequence } from '../../src/session/sequence.js';
import { repoRoot } from '../helpers/project.js';

const scratch: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-sequence-'));
  scratch.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `count` numbers taken by another process, as it printed them. */
function takeInChild(dir: string, count: number): Promise<number[]> {
  const script =
    `import { HostSequence } from ${JSON.stringify(path.join(repoRoot, 'src/session/sequence.ts'))};` +
    `const s = new HostSequence(${JSON.stringify(dir)}); const out = [];` +
    `for (let i = 0; i < ${count}; i++) out.push(s.next()?.number ?? -1);` +
    'process.stdout.write(JSON.stringify(out));';
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: repoRoot,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(stdout) as number[]) : reject(new Error(`exit ${code}: ${stderr}`)),
    ),
  );
}

describe('the host sequence', () => {
  it('starts a counter and takes growing numbers of it, across instances', () => {
    const dir = path.join(tempDir(), 'sequence');
    const first = new HostSequence(dir).next();
    const second = new HostSequence(dir).next();
    expect(first?.number).toBe(1);
    expect(second).toEqual({ counter: first!.counter, number: 2 });
    // One file: the counter's id and the last number taken.
    expect(readdirSync(dir)).toEqual([`${first!.counter}.2`]);
  });

  it('gives each number to one process only when processes race for them', async () => {
    const dir = path.join(tempDir(), 'sequence');
    new HostSequence(dir).next();
    const taken = (
      await Promise.all([takeInChild(dir, 300), takeInChild(dir, 300), takeInChild(dir, 300)])
    ).flat();
    expect(taken).not.toContain(-1);
    expect(new Set(taken).size).toBe(900);
    // Each process saw its own numbers grow.
    expect(Math.min(...taken)).toBe(2);
    expect(Math.max(...taken)).toBe(901);
  });

  it('follows the counter with the highest number when two were made at once, ignoring other files', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, '01HZZZZZZZZZZZZZZZZZZZZZZZ.4'), '');
    writeFileSync(path.join(dir, '01J00000000000000000000000.9'), '');
    writeFileSync(path.join(dir, 'notes.txt'), '');
    writeFileSync(path.join(dir, '01J00000000000000000000000.99999999999999999'), '');
    expect(new HostSequence(dir).next()).toEqual({ counter: '01J00000000000000000000000', number: 10 });
  });

  it('leaves events without a sequence when the counter cannot be written, and the command goes on', () => {
    const file = path.join(tempDir(), 'sequence');
    writeFileSync(file, 'not a directory');
    const sequence = new HostSequence(file);
    expect(sequence.next()).toBeUndefined();
    expect(sequence.next()).toBeUndefined();
  });

  it('is stamped by a session bus on the events whose order matters only', () => {
    const dir = path.join(tempDir(), 'sequence');
    const sequence = new HostSequence(dir);
    const bus = new SessionBus(undefined, () => sequence.next());
    const started = bus.emit('sessionStarted', {
      command: 'deploy',
      args: [],
      project: 'shop',
      environment: 'dev',
      namespace: 'shop-dev',
      user: 'alice',
      hostId: 'h',
      cliVersion: '0.1.0',
    });
    const heartbeat = bus.emit('sessionHeartbeat', {
      project: 'shop',
      environment: 'dev',
      namespace: 'shop-dev',
      uptimeMs: 1,
    });
    expect(started?.sequence?.number).toBe(1);
    expect(heartbeat && 'sequence' in heartbeat).toBe(false);
  });
});
