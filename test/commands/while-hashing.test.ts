/**
 * `whileHashing`: what the cluster is asked and the versions, at once — the versions from the
 * event loop's next turn, once the requests are sent — and their errors in the order the two
 * would have met them in turn: the cluster's first.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { whileHashing } from '../../src/commands/context.js';

describe('whileHashing', () => {
  it('gives both results, the versions worked out only from the next turn of the event loop', async () => {
    let started = false;
    const both = whileHashing(Promise.resolve('asked'), async () => {
      started = true;
      return 'versions';
    });
    // Every promise already settled has run its callbacks: not yet the hashing.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(started).toBe(false);
    await nextTurn();
    expect(started).toBe(true);
    expect(await both).toEqual(['asked', 'versions']);
  });

  it("throws the cluster's error before the versions', whichever settles first", async () => {
    const clusterError = new Error('the cluster refused');
    const versionsError = new Error('a version could not be worked out');
    const lateCluster = nextTurn()
      .then(() => nextTurn())
      .then(() => Promise.reject(clusterError));
    await expect(whileHashing(lateCluster, () => Promise.reject(versionsError))).rejects.toBe(clusterError);
    await expect(whileHashing(Promise.resolve(1), () => Promise.reject(versionsError))).rejects.toBe(
      versionsError,
    );
    // A failed request does not leave the hashing running unwatched: it is settled too.
    let hashed = false;
    await expect(
      whileHashing(Promise.reject(clusterError), async () => {
        hashed = true;
        return 0;
      }),
    ).rejects.toBe(clusterError);
    expect(hashed).toBe(true);
  });
});
