/**
 * The archive's safety attacks (docs/cleanup.md#undo), written before the feature: the archive
 * route takes an archive only from the executor holding a started delete job's lease, with an
 * agent token bound to no project and, if bound to clusters, to the job's; only admins of the
 * environment's project read it back; bad bodies (not gzip, too large, a zip bomb, NUL, lone
 * surrogates, deep nesting, another namespace) are refused with a clear 4xx and nothing stored;
 * a tampered archive is refused when read (AES-256-GCM). End to end on kube-sim: an archive the
 * server does not store means no DELETE — the job fails and is retried.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  compressArchive,
  type ArchivedObject,
  type KubernetesArchive,
} from '../../../src/cleanup/archive.js';
import { archiveKeyOf } from '../../../src/server/cleanup/archive-key.js';
import { TokenRepository } from '../../../src/server/db/repositories/tokens.js';
import { ArchiveRepository } from '../../../src/server/db/repositories/archives.js';
import { ArchiveStore } from '../../../src/server/cleanup/archives.js';
import { Metrics } from '../../../src/server/metrics.js';
import { stage } from '../../adversarial/harness.js';
import { countRows, dialects } from '../helpers.js';
import { cleanupFixture, target, type CleanupFixture } from './fixture.js';

const key = archiveKeyOf(Buffer.from(randomBytes(32).toString('hex')), 'test');

function archiveOf(
  namespace: string,
  uid: string,
  extra: Partial<KubernetesArchive> = {},
): KubernetesArchive {
  return {
    kind: 'kubernetes',
    namespace: { name: namespace, uid, labels: { 'app.kubernetes.io/managed-by': 'tend' }, annotations: {} },
    objects: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings' },
        data: { a: 'b' },
      } as ArchivedObject,
    ],
    secrets: [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'db' },
        data: { password: 'aHVudGVyMg==' },
      } as ArchivedObject,
    ],
    notArchived: [],
    ...extra,
  };
}

describe.each(dialects)('archive attacks on %s', (dialect) => {
  let f: CleanupFixture;
  let jobId: string;
  let envId: string;
  let otherCluster: string;
  let otherProjectAgent: string;
  let otherProjectAdmin: string;
  beforeAll(async () => {
    f = await cleanupFixture(dialect, 10, {
      cleanup: {
        intervalMs: 30_000,
        maxPerPass: 10,
        archive: { retentionMs: 7 * 86_400_000, maxBytes: 64 * 1024, key },
      },
    });
    const tokens = new TokenRepository(f.server.database.db);
    otherCluster = (await tokens.create({ name: 'agent-c2', scope: 'agent', clusters: ['cluster-2'] })).token;
    otherProjectAgent = (await tokens.create({ name: 'agent-shop', scope: 'agent', project: 'other' })).token;
    otherProjectAdmin = f.server.tokens.otherProject;
    envId = (await f.environment({ user: 'alice' })).id;
    await f.report('e1', [f.item('shop-alice', 'uid-alice')]);
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    f.advance(9 * 3_600_000);
    await f.report('e1', [f.item('shop-alice', 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'e1', targetKeys: [target] },
      f.server.tokens.agent,
    );
    jobId = claimed.body.jobs[0].id as string;
    expect(claimed.body.jobs[0].archive).toBe('with-secrets');
  });
  afterAll(async () => {
    await f.close();
  });

  const post = async (body: Buffer, token = f.server.tokens.agent, executorId = 'e1', id = jobId) => {
    const res = await f.server.app.inject({
      method: 'POST',
      url: `/api/v1/cleanup/jobs/${encodeURIComponent(id)}/archive?executorId=${executorId}`,
      headers: { ...f.server.auth(token), 'content-type': 'application/gzip' },
      payload: body,
    });
    return { status: res.statusCode, body: res.json() as { error?: { code: string; message: string } } };
  };
  const stored = () => countRows(f.server.database.db, 'environment_archives');

  it('before start: only a started delete job stores an archive (409), nothing stored', async () => {
    const res = await post(compressArchive(archiveOf('shop-alice', 'uid-alice')));
    expect(res.status).toBe(409);
    expect(res.body.error?.message).toMatch(/not started/);
    expect(await stored()).toBe(0);
    const started = await f.call(
      'POST',
      `/api/v1/cleanup/jobs/${jobId}/start`,
      { executorId: 'e1' },
      f.server.tokens.agent,
    );
    expect(started.body.proceed).toBe(true);
  });

  it('a project-bound agent token, another cluster, another executor, or a read token cannot post one', async () => {
    const body = compressArchive(archiveOf('shop-alice', 'uid-alice'));
    expect((await post(body, otherProjectAgent)).status).toBe(403);
    expect((await post(body, otherCluster)).status).toBe(403);
    expect((await post(body, f.server.tokens.read)).status).toBe(403);
    const other = await post(body, f.server.tokens.agent, 'e2');
    expect(other.status).toBe(409);
    expect(other.body.error?.code).toBe('TEND_CLEANUP_LEASE_LOST');
    expect((await post(body, f.server.tokens.agent, 'e1', 'no-such-job')).status).toBe(404);
    expect(await stored()).toBe(0);
  });

  it('bad bodies are refused with the reason; nothing stored', async () => {
    const cases: [Buffer, number, RegExp][] = [
      [Buffer.from('not gzip'), 400, /not gzip-compressed JSON/],
      [gzipSync('{"kind": '), 400, /not JSON/],
      [compressArchive(archiveOf('shop-bob', 'uid-alice')), 400, /the job deletes "shop-alice"/],
      [compressArchive(archiveOf('shop-alice', 'uid-other')), 400, /the job deletes uid uid-alice/],
      // Another plugin's kind of archive for a namespace's job (it would skip the uid check).
      [
        gzipSync(JSON.stringify({ kind: 'exec', path: '/srv/shop-alice', state: {}, notArchived: [] })),
        400,
        /it is a exec archive, the job deletes a resource of plugin kubernetes/,
      ],
      // Only the kinds tend archives, Secrets only among the Secrets, names a URL path takes.
      [
        compressArchive(
          archiveOf('shop-alice', 'uid-alice', {
            objects: [
              {
                apiVersion: 'rbac.authorization.k8s.io/v1',
                kind: 'ClusterRoleBinding',
                metadata: { name: 'x' },
              } as ArchivedObject,
            ],
          }),
        ),
        400,
        /\/objects\/0 is a rbac.authorization.k8s.io\/v1 ClusterRoleBinding: not a kind tend archives/,
      ],
      [
        compressArchive(
          archiveOf('shop-alice', 'uid-alice', {
            secrets: [
              { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } } as ArchivedObject,
            ],
          }),
        ),
        400,
        /\/secrets\/0 is not a v1 Secret/,
      ],
      [
        compressArchive(
          archiveOf('shop-alice', 'uid-alice', {
            objects: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '..' } } as ArchivedObject],
          }),
        ),
        400,
        /\/objects\/0\/metadata\/name/,
      ],
      [
        gzipSync(JSON.stringify({ ...archiveOf('shop-alice', 'uid-alice'), notArchived: ['a\u0000b'] })),
        400,
        /\/notArchived\/0 .*NUL/,
      ],
      [
        gzipSync(JSON.stringify({ ...archiveOf('shop-alice', 'uid-alice'), notArchived: ['\ud800'] })),
        400,
        /surrogate/,
      ],
      [
        gzipSync(
          JSON.stringify({
            ...archiveOf('shop-alice', 'uid-alice'),
            objects: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                metadata: { name: 'x' },
                deep: JSON.parse('['.repeat(100) + ']'.repeat(100)),
              },
            ],
          }),
        ),
        400,
        /nested deeper than 32 levels/,
      ],
      [gzipSync(JSON.stringify({ kind: 'kubernetes' })), 400, /archive is refused/],
      // Over --archive-max-size compressed (incompressible), and a zip bomb: 413, clear.
      [randomBytes(80 * 1024), 413, /exceeds the limit of 64 KiB.*namespace is not deleted/],
      [gzipSync(Buffer.alloc(64 * 1024 * 17)), 413, /decompresses to more than/],
    ];
    for (const [body, status, message] of cases) {
      const res = await post(body);
      expect({ status: res.status, message: res.body.error?.message }).toMatchObject({
        status,
        message: expect.stringMatching(message),
      });
    }
    expect(await stored()).toBe(0);
  });

  it('the executor stores it; another project cannot read it (404), a read token cannot (403); a tampered one is refused', async () => {
    const ok = await post(compressArchive(archiveOf('shop-alice', 'uid-alice')));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ objects: 1, secrets: 1, secretsNotKept: [] });
    expect(
      (await f.call('GET', `/api/v1/environments/${envId}/archive`, undefined, otherProjectAdmin)).status,
    ).toBe(404);
    expect(
      (await f.call('GET', `/api/v1/environments/${envId}/archive`, undefined, f.server.tokens.read)).status,
    ).toBe(403);
    // A developer may keep alive and clean up, not read Secrets unsealed: restore is admin-only.
    expect(
      (await f.call('GET', `/api/v1/environments/${envId}/archive`, undefined, f.server.tokens.developer))
        .status,
    ).toBe(403);
    const read = await f.call('GET', `/api/v1/environments/${envId}/archive`);
    expect(read.status).toBe(200);
    expect(read.body.archive.secrets[0].data.password).toBe('aHVudGVyMg==');
    const metrics = await f.server.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: f.server.auth(f.server.tokens.admin),
    });
    expect(metrics.body).toMatch(/tend_archives_total\{outcome="stored"\} 1/);
    expect(metrics.body).toMatch(/tend_archives 1\n/);

    // Someone with the database changes an object of the body: the seal no longer matches.
    const db = f.server.database.db;
    const row = await db.selectFrom('environment_archives').selectAll().executeTakeFirstOrThrow();
    const tampered = JSON.parse(
      (await import('node:zlib')).gunzipSync(Buffer.from(row.body, 'base64')).toString(),
    ) as KubernetesArchive;
    (tampered.objects[0] as ArchivedObject).data = { a: 'evil' };
    await db
      .updateTable('environment_archives')
      .set({ body: gzipSync(JSON.stringify(tampered)).toString('base64') })
      .where('id', '=', row.id)
      .execute();
    const refused = await f.call('GET', `/api/v1/environments/${envId}/archive`);
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({
      code: 'TEND_ARCHIVE',
      message: expect.stringMatching(/fails authentication: it was changed after it was stored/),
    });
    // The sealed Secrets changed: refused too.
    const sealed = Buffer.from(row.secrets_sealed!, 'base64');
    sealed[sealed.length - 1]! ^= 1;
    await db
      .updateTable('environment_archives')
      .set({ body: row.body, secrets_sealed: sealed.toString('base64') })
      .where('id', '=', row.id)
      .execute();
    expect((await f.call('GET', `/api/v1/environments/${envId}/archive`)).status).toBe(422);
  });

  it('a lowered retention holds for the archives already kept; an expired one is neither counted nor offered, then pruned', async () => {
    expect(await stored()).toBe(1);
    const archivesGauge = async () =>
      /^tend_archives (\d+)$/m.exec(
        (
          await f.server.app.inject({
            method: 'GET',
            url: '/metrics',
            headers: f.server.auth(f.server.tokens.admin),
          })
        ).body,
      )?.[1];
    f.advance(2 * 86_400_000);
    // Restarted with --archive-retention 1d: the archive taken two days ago under 7d goes now.
    const restarted = new ArchiveStore(
      new ArchiveRepository(f.server.database.db, f.server.database.reader),
      new Metrics(),
      { ...f.server.app.cleanup.archives.settings, retentionMs: 86_400_000 },
    );
    expect(await restarted.prune(f.now())).toBe(1);
    expect(await stored()).toBe(0);
    expect((await f.call('GET', `/api/v1/environments/${envId}/archive`)).status).toBe(404);
    expect(await archivesGauge()).toBe('0');
  });
});

it('an archive the server does not take (too large) means no DELETE: the job fails and is retried, the namespace stays', async () => {
  const st = await stage('sqlite', { archive: { maxBytes: 64 * 1024 } });
  try {
    const root = st.project({ name: 'big', namespace: 'big-dev' });
    expect((await st.tend(root, 'deploy')).code).toBe(0);
    // 200 KiB that does not compress: over the limit.
    st.sim.sim.store.create('configmaps', 'big-dev', {
      metadata: { name: 'blob' },
      data: { blob: randomBytes(200 * 1024).toString('base64') },
    } as never);
    await st.enforce('big');
    st.advance(2 * 3_600_000);
    const { after } = await st.cleanupRound();
    expect(after.jobs).toEqual([
      expect.objectContaining({
        namespaceName: 'big-dev',
        outcome: 'failed',
        message: expect.stringMatching(
          /over the limit of 65536 bytes \(--archive-max-size\); not stored, so the namespace is not deleted/,
        ),
      }),
    ]);
    expect(st.namespaceExists('big-dev')).toBe(true);
    const job = await st.server.database.db
      .selectFrom('cleanup_jobs')
      .select(['state', 'attempts', 'not_before'])
      .executeTakeFirstOrThrow();
    expect(job.state).toBe('planned');
    expect(Number(job.attempts)).toBe(1);
    expect(job.not_before).not.toBeNull();
    expect(await countRows(st.server.database.db, 'environment_archives')).toBe(0);
    expect(
      st.sim.sim.requests
        .list()
        .some((r) => r.method === 'DELETE' && r.path === '/api/v1/namespaces/big-dev'),
    ).toBe(false);
  } finally {
    await st.stop();
  }
}, 120_000);

it('an executor denied a kind it archives does not delete; denied only Secrets, it archives the rest and deletes', async () => {
  const st = await stage('sqlite');
  try {
    const root = st.project({ name: 'denied', namespace: 'denied-dev' });
    expect((await st.tend(root, 'deploy')).code).toBe(0);
    const denied = st.sim.sim.faults.add({
      type: 'error',
      status: 403,
      verb: 'list',
      resource: 'configmaps',
    });
    await st.enforce('denied');
    st.advance(2 * 3_600_000);
    const first = await st.cleanupRound();
    expect(first.after.jobs).toEqual([
      expect.objectContaining({ namespaceName: 'denied-dev', outcome: 'failed' }),
    ]);
    expect(st.namespaceExists('denied-dev')).toBe(true);
    expect(await countRows(st.server.database.db, 'environment_archives')).toBe(0);

    st.sim.sim.faults.remove(denied);
    st.sim.sim.faults.add({ type: 'error', status: 403, verb: 'list', resource: 'secrets' });
    st.advance(3_600_000); // past the failed job's retry time
    // The retried job is claimed by the round's first executor pass.
    const second = await st.cleanupRound();
    expect([...second.before.jobs, ...second.after.jobs]).toEqual([
      expect.objectContaining({ namespaceName: 'denied-dev', outcome: 'done' }),
    ]);
    expect(st.namespaceExists('denied-dev')).toBe(false);
    expect(await countRows(st.server.database.db, 'environment_archives')).toBe(1);
  } finally {
    await st.stop();
  }
}, 120_000);

describe.each(dialects)('an archive read back, on %s', (dialect) => {
  let f: CleanupFixture;
  beforeEach(async () => {
    f = await cleanupFixture(dialect, 10, {
      cleanup: {
        intervalMs: 30_000,
        maxPerPass: 10,
        archive: { retentionMs: 7 * 86_400_000, maxBytes: 64 * 1024, key },
      },
    });
  });
  afterEach(async () => {
    await f.close();
  });

  /** Two idle environments of `shop`; the first one's delete job archives it and deletes it. */
  async function archivedAndCleaned() {
    const alice = await f.environment({ user: 'alice' });
    const bob = await f.environment({ user: 'bob' });
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    f.advance(9 * 3_600_000);
    await f.report('e1', [f.item('shop-alice', 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    const claimed = await f.call(
      'POST',
      '/api/v1/cleanup/jobs/claim',
      { executorId: 'e1', targetKeys: [target], max: 1 },
      f.server.tokens.agent,
    );
    const job = claimed.body.jobs.find((j: { namespaceName: string }) => j.namespaceName === 'shop-alice');
    const agent = (url: string, payload?: object) =>
      f.server.app.inject({
        method: 'POST',
        url,
        headers: {
          ...f.server.auth(f.server.tokens.agent),
          ...(payload ? {} : { 'content-type': 'application/gzip' }),
        },
        payload: payload ?? compressArchive(archiveOf('shop-alice', 'uid-alice')),
      });
    expect((await agent(`/api/v1/cleanup/jobs/${job.id}/start`, { executorId: 'e1' })).statusCode).toBe(200);
    expect((await agent(`/api/v1/cleanup/jobs/${job.id}/archive?executorId=e1`)).statusCode).toBe(200);
    const done = await agent(`/api/v1/cleanup/jobs/${job.id}/complete`, {
      executorId: 'e1',
      outcome: 'done',
      message: 'deleted',
    });
    expect(done.statusCode).toBe(200);
    return { alice, bob };
  }

  it("an archive moved to another environment's id fails authentication", async () => {
    const { alice, bob } = await archivedAndCleaned();
    expect((await f.call('GET', `/api/v1/environments/${alice.id}/archive`)).status).toBe(200);
    // Someone with the database gives alice's archive (Secrets and all) to bob's environment.
    await f.server.database.db
      .updateTable('environment_archives')
      .set({ environment_id: bob.id, environment: 'dev' })
      .where('environment_id', '=', alice.id)
      .execute();
    const moved = await f.call('GET', `/api/v1/environments/${bob.id}/archive`);
    expect(moved.status).toBe(422);
    expect(moved.body.error).toMatchObject({
      code: 'TEND_ARCHIVE',
      message: expect.stringMatching(/fails authentication/),
    });
  });

  it('an expired archive is not found (404) before it is pruned', async () => {
    const { alice } = await archivedAndCleaned();
    f.advance(7 * 86_400_000 + 1000);
    const expired = await f.call('GET', `/api/v1/environments/${alice.id}/archive`);
    expect(expired.status).toBe(404);
    expect(expired.body.error.code).toBe('TEND_ARCHIVE_NOT_FOUND');
    expect(
      (await f.call('POST', `/api/v1/environments/${alice.id}/restore`, { into: 'shop-alice-back' })).status,
    ).toBe(404);
    // Still stored: no prune ran, the read alone refuses it.
    expect(await countRows(f.server.database.db, 'environment_archives')).toBe(1);
  });

  it('an archive sealed with another key is refused when a restore is asked for, before a job exists', async () => {
    const { alice } = await archivedAndCleaned();
    await f.server.database.db
      .updateTable('environment_archives')
      .set({ key_fingerprint: 'sha256:0123456789abcdef' })
      .where('environment_id', '=', alice.id)
      .execute();
    const asked = await f.call('POST', `/api/v1/environments/${alice.id}/restore`, {
      into: 'shop-alice-back',
    });
    expect(asked.status).toBe(422);
    expect(asked.body.error).toMatchObject({
      code: 'TEND_ARCHIVE',
      message: expect.stringMatching(/was sealed with archive key sha256:0123456789abcdef/),
    });
    const restoreJobs = await f.server.database.db
      .selectFrom('cleanup_jobs')
      .select('id')
      .where('action', '=', 'restore')
      .execute();
    expect(restoreJobs).toEqual([]);
  });
});
