/**
 * Event ids (src/events/bus.ts `newId`): ULIDs whose random part comes from a generator seeded
 * once per process. Monotonic within a process; unique across processes started at once.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/events/bus.js';

const bus = fileURLToPath(new URL('../../src/events/bus.ts', import.meta.url));

/** `count` ids made by a process of their own. */
function idsOfAnotherProcess(count: number): Promise<string[]> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import { newId } from ${JSON.stringify(bus)};
       const ids = []; for (let i = 0; i < ${count}; i++) ids.push(newId());
       process.stdout.write(ids.join('\\n'));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(out.split('\n')) : reject(new Error(`exit ${code}`)),
    );
  });
}

describe('event ids', () => {
  it('are ULIDs, increasing within a process', () => {
    const ids = Array.from({ length: 10_000 }, () => newId());
    for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('differ between processes started at the same time', async () => {
    const lists = await Promise.all([0, 1, 2, 3].map(() => idsOfAnotherProcess(5_000)));
    const all = lists.flat();
    expect(all).toHaveLength(20_000);
    expect(new Set(all).size).toBe(all.length);
    // Each process draws its own random part: the first ids do not share it.
    expect(new Set(lists.map((ids) => ids[0]!.slice(10))).size).toBe(4);
  });
});
