/** `readiness()` decides as `kubectl rollout status` does, status field by status field. */
import { describe, expect, it } from 'vitest';
import { readiness } from '../../../src/plugins/kubernetes/readiness.js';
import type { KubeObject } from '../../../src/plugins/kubernetes/client/index.js';

const workload = (kind: string, spec: object, status: object, generation = 2): KubeObject => ({
  apiVersion: 'apps/v1',
  kind,
  metadata: { name: 'web', generation },
  spec,
  status,
});

describe('readiness', () => {
  it.each([
    [
      'generation not observed',
      { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
      false,
      /not observed/,
    ],
    [
      'too few updated',
      { observedGeneration: 2, replicas: 3, updatedReplicas: 1, availableReplicas: 2 },
      false,
      /1 of 2 new replicas updated/,
    ],
    [
      'an old replica left',
      { observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 3 },
      false,
      /1 old replica pending termination/,
    ],
    [
      'updated but not available',
      { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1 },
      false,
      /1 of 2 updated replicas available/,
    ],
    [
      'rolled out',
      { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
      true,
      undefined,
    ],
  ])('Deployment: %s', (_what, status, ready, reason) => {
    const state = readiness(workload('Deployment', { replicas: 2 }, status));
    expect(state.ready).toBe(ready);
    if (reason) expect(state.reason).toMatch(reason);
  });

  it("Job: complete is ready, failed fails; with Garden's waitForJobs: false, one not failed is ready", () => {
    const job = (conditions: object[]) => workload('Job', {}, { active: 1, conditions });
    expect(readiness(job([]))).toEqual({ ready: false, reason: '0 succeeded, 1 active' });
    expect(readiness(job([]), { waitForJobs: false })).toEqual({ ready: true });
    expect(readiness(job([{ type: 'Complete', status: 'True' }]))).toEqual({ ready: true });
    const failed = job([{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }]);
    expect(readiness(failed, { waitForJobs: false })).toEqual({
      ready: false,
      failed: true,
      reason: 'failed: BackoffLimitExceeded',
    });
  });

  it('Deployment: a progress deadline exceeded fails at once', () => {
    const state = readiness(
      workload(
        'Deployment',
        { replicas: 1 },
        {
          observedGeneration: 2,
          conditions: [
            {
              type: 'Progressing',
              status: 'False',
              reason: 'ProgressDeadlineExceeded',
              message: 'timed out',
            },
          ],
        },
      ),
    );
    expect(state).toEqual({ ready: false, failed: true, reason: 'timed out' });
  });

  it('StatefulSet: every pod ready and, down to the partition, updated; OnDelete needs ready only', () => {
    const spec = (partition: number) => ({
      replicas: 3,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition } },
    });
    const status = {
      observedGeneration: 2,
      readyReplicas: 3,
      updatedReplicas: 1,
      currentRevision: 'a',
      updateRevision: 'b',
    };
    expect(readiness(workload('StatefulSet', spec(0), status))).toMatchObject({
      ready: false,
      reason: '1 of 3 pods updated to the new revision',
    });
    expect(readiness(workload('StatefulSet', spec(2), status)).ready).toBe(true);
    expect(
      readiness(workload('StatefulSet', spec(0), { ...status, readyReplicas: 2, updatedReplicas: 3 })).reason,
    ).toBe('2 of 3 pods ready');
    expect(
      readiness(workload('StatefulSet', { replicas: 3, updateStrategy: { type: 'OnDelete' } }, status)).ready,
    ).toBe(true);
    // Without rollingUpdate: the revisions must agree.
    expect(
      readiness(workload('StatefulSet', { replicas: 3, updateStrategy: { type: 'RollingUpdate' } }, status))
        .ready,
    ).toBe(false);
  });

  it('DaemonSet: every scheduled pod updated and available', () => {
    const status = {
      observedGeneration: 2,
      desiredNumberScheduled: 2,
      updatedNumberScheduled: 1,
      numberAvailable: 2,
    };
    expect(readiness(workload('DaemonSet', {}, status)).reason).toBe('1 of 2 new pods updated');
    expect(
      readiness(workload('DaemonSet', {}, { ...status, updatedNumberScheduled: 2, numberAvailable: 1 }))
        .reason,
    ).toBe('1 of 2 pods available');
    expect(readiness(workload('DaemonSet', {}, { ...status, updatedNumberScheduled: 2 })).ready).toBe(true);
    expect(
      readiness(workload('DaemonSet', {}, { ...status, observedGeneration: 1, updatedNumberScheduled: 2 }))
        .ready,
    ).toBe(false);
  });
});
