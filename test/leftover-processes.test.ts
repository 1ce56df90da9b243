import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { checkLeftovers } from './leftover-processes.js';

const exited = (child: ReturnType<typeof spawn>) =>
  new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));

it('fails naming a process the run left, and kills it; passes once none is left', async () => {
  const marker = randomUUID();
  const child = spawn('sleep', ['60'], { stdio: 'ignore', env: { ...process.env, TEND_TEST_RUN: marker } });
  const ended = exited(child);
  await expect(checkLeftovers(marker, 0)).rejects.toThrow(
    new RegExp(`left 1 process\\(es\\) running \\(killed now\\):\\n {2}${child.pid}: sleep 60$`),
  );
  expect(await ended).toBe('SIGKILL');
  await expect(checkLeftovers(marker, 0)).resolves.toBeUndefined();
});

it('waits out a process that ends within the grace', async () => {
  const marker = randomUUID();
  const child = spawn('sleep', ['0.3'], { stdio: 'ignore', env: { ...process.env, TEND_TEST_RUN: marker } });
  const ended = exited(child);
  await expect(checkLeftovers(marker, 10_000)).resolves.toBeUndefined();
  expect(await ended).toBeNull();
});
