// @ts-check
/**
 * An example third-party tend plugin whose environments are buckets of a small object store
 * (../store.js, over HTTP): the provider `buckets` keeps the bucket named by the environment's
 * resource name (created with tend's marks, or adopted when it was there before), the Deploy
 * action type `object` writes one object into it, the plugin reports what it does in event types
 * of its own (`buckets.bucketCreated`, `buckets.objectWritten`), and its `cleanup` part lets
 * tend's executors list, archive, delete, pause and resume idle environments and restore a
 * deleted one — with no file of tend naming this plugin. Its target kind is `buckets`; a store is
 * one target, named by the store's id. See docs/plugin-api.md#tutorial-a-plugin-for-buckets.
 */
import { TendError, targetKey } from 'tend';
import { Type } from 'typebox';

/** The provider entry's own keys; the executor's settings are the same (`--set buckets.url=…`). */
const Connection = {
  url: Type.String({ minLength: 1, description: 'the object store, e.g. http://127.0.0.1:9400' }),
  token: Type.Optional(Type.String({ minLength: 1, description: 'its bearer token, if it has one' })),
};
const ProviderConfig = Type.Object(Connection, { additionalProperties: false });
const Settings = Type.Object(
  { ...Connection, pageSize: Type.Integer({ minimum: 1, maximum: 1000, default: 500 }) },
  { additionalProperties: false },
);

const ObjectSpec = Type.Object(
  {
    key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'default: the action name' }),
    ),
    content: Type.String({ maxLength: 65536 }),
    contentType: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);

/** The marks the plugin writes on a bucket: a label tend lists by, annotations for the rest. */
const marks = {
  managedBy: 'managed-by',
  project: 'tend.dev/project',
  environment: 'tend.dev/environment',
  lastActivity: 'tend.dev/last-activity',
  adopted: 'tend.dev/adopted',
  /** What a pause changed, as JSON (`{readOnly, pausedAt}`): what resume writes back. */
  paused: 'tend.dev/paused',
};

// ---------------------------------------------------------------------------------------------
// The store's HTTP API, as the plugin uses it.

/**
 * A client of one store: each call one request, its failures thrown as TEND_ACTION_FAILED with the
 * store's words, except the answers the caller decides on (404, 409, 412, 423), returned as
 * `{status}`.
 * @param {{ url: string, token?: string }} connection
 * @param {AbortSignal} [signal]
 */
function storeClient({ url, token }, signal) {
  const base = url.replace(/\/+$/, '');
  const expected = new Set([404, 409, 412, 423]);
  /** @returns {Promise<{ status: number, body?: any, bytes?: Buffer }>} */
  async function request(method, route, { json, bytes, contentType, ifMatch } = /** @type {any} */ ({})) {
    const headers = /** @type {Record<string, string>} */ ({});
    if (token) headers.authorization = `Bearer ${token}`;
    if (ifMatch) headers['if-match'] = `"${ifMatch}"`;
    if (json !== undefined) headers['content-type'] = 'application/json';
    if (bytes !== undefined) headers['content-type'] = contentType ?? 'application/octet-stream';
    let response;
    try {
      response = await fetch(`${base}${route}`, {
        method,
        headers,
        body: json !== undefined ? JSON.stringify(json) : bytes,
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new TendError('TEND_ACTION_FAILED', `the store at ${base} cannot be reached: ${causeOf(error)}`);
    }
    if (response.ok || expected.has(response.status)) {
      const type = response.headers.get('content-type') ?? '';
      if (response.status === 204) return { status: 204 };
      if (type.startsWith('application/json'))
        return { status: response.status, body: await response.json() };
      return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
    }
    const text = await response.text();
    let message = text.slice(0, 500);
    try {
      message = JSON.parse(text).error.message;
    } catch {
      // not the store's JSON error: its text as it is
    }
    throw new TendError(
      'TEND_ACTION_FAILED',
      `the store at ${base} answered ${method} ${route} with ${response.status}: ${message}`,
      { detail: { status: response.status } },
    );
  }
  const bucketRoute = (name) => `/buckets/${encodeURIComponent(name)}`;
  const objectRoute = (name, key) => `${bucketRoute(name)}/objects/${encodeURIComponent(key)}`;
  return {
    base,
    /** `{storeId, now}`: the store's identity and clock. */
    info: async () => (await request('GET', '/')).body,
    /** One page of the buckets with tend's label: `{items, continue?, remaining, now}`. */
    listBuckets: async (limit, after) =>
      (
        await request(
          'GET',
          `/buckets?selector=${encodeURIComponent(`${marks.managedBy}=tend`)}&limit=${limit}` +
            (after ? `&continue=${encodeURIComponent(after)}` : ''),
        )
      ).body,
    /** The bucket, or undefined when there is none. */
    getBucket: async (name) => {
      const { status, body } = await request('GET', bucketRoute(name));
      return status === 404 ? undefined : body;
    },
    /** The new bucket, or undefined when one of that name exists. */
    createBucket: async (name, metadata) => {
      const { status, body } = await request('PUT', bucketRoute(name), { json: metadata });
      return status === 409 ? undefined : body;
    },
    /** `{bucket}`, or `{stale: true}` (412: the version changed), or `{gone: true}`. */
    patchBucket: async (name, patch, ifMatch) => {
      const { status, body } = await request('PATCH', bucketRoute(name), { json: patch, ifMatch });
      return status === 404 ? { gone: true } : status === 412 ? { stale: true } : { bucket: body };
    },
    /** `done`, `gone` (404) or `stale` (412). */
    deleteBucket: async (name, ifMatch) => {
      const { status } = await request('DELETE', bucketRoute(name), { ifMatch });
      return status === 404 ? 'gone' : status === 412 ? 'stale' : 'done';
    },
    /** One page of the bucket's objects: `{items: [{key, etag, size, contentType}], continue?, remaining}`. */
    listObjects: async (name, limit, after) =>
      (
        await request(
          'GET',
          `${bucketRoute(name)}/objects?limit=${limit}` +
            (after ? `&continue=${encodeURIComponent(after)}` : ''),
        )
      ).body,
    /** The object's bytes, or undefined when there is none. */
    getObject: async (name, key) => {
      const { status, bytes } = await request('GET', objectRoute(name, key));
      return status === 404 ? undefined : bytes;
    },
    /** `{key, etag, size}`; throws when the bucket is read-only (paused) or gone. */
    putObject: async (name, key, bytes, contentType) => {
      const { status, body } = await request('PUT', objectRoute(name, key), { bytes, contentType });
      if (status === 423) {
        throw new TendError('TEND_ACTION_FAILED', `bucket ${name} is read-only: object ${key} not written`);
      }
      if (status === 404) throw new TendError('TEND_ACTION_FAILED', `bucket ${name} does not exist`);
      return body;
    },
    deleteObject: async (name, key) => (await request('DELETE', objectRoute(name, key))).status,
  };
}

const causeOf = (error) => {
  const cause = /** @type {{ cause?: { code?: string, message?: string } }} */ (error).cause;
  return cause?.code ?? cause?.message ?? /** @type {Error} */ (error).message;
};

// ---------------------------------------------------------------------------------------------
// What the plugin reports: its target, resourceStatus, and events of its own.

/** The target events carry for a store: the plugin's own kind, the store's id, the URL for people. */
const targetOf = (base, storeId) => ({
  kind: /** @type {const} */ ('plugin'),
  targetKind: 'buckets',
  id: storeId,
  label: `buckets of the store at ${base}`,
});

/**
 * Reports the environment's bucket — every call that touches it does, before the work that can
 * fail. `bucket` undefined: there is none (or, deleted, only its uid is known).
 */
function report(ctx, target, name, bucket, state, cause, project, environment) {
  ctx.events.emit('resourceStatus', {
    resourceName: name,
    ...(bucket?.uid ? { resourceUid: bucket.uid } : {}),
    state,
    role: 'app',
    cause,
    target,
    project,
    environment,
    ...(bucket?.annotations ? { detail: { adopted: bucket.annotations[marks.adopted] === 'true' } } : {}),
  });
}

/** The plugin's own event types: declared here, emitted by the provider and the action type. */
const eventTypes = [
  {
    name: 'buckets.bucketCreated',
    description: 'a bucket was created for the environment',
    payloadSchema: Type.Object(
      { bucket: Type.String(), uid: Type.String(), store: Type.String() },
      { additionalProperties: false },
    ),
    streamed: true,
    dedupeKey: ['bucket'],
  },
  {
    name: 'buckets.objectWritten',
    description: 'an object was written into the environment’s bucket',
    payloadSchema: Type.Object(
      { bucket: Type.String(), key: Type.String(), etag: Type.String(), size: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
    streamed: true,
    // A write of the same content again (same etag) says nothing new: coalesced.
    dedupeKey: ['bucket', 'key'],
  },
];

// ---------------------------------------------------------------------------------------------
// The provider: one bucket per environment.

/** The provider's view of this call's environment. */
async function environmentOf(ctx) {
  const store = storeClient(ctx.provider.config, ctx.signal);
  const { storeId } = await store.info();
  const { project, name: environment, resourceName: name } = ctx.environment;
  return { store, name, project, environment, target: targetOf(store.base, storeId) };
}

/** Whose the bucket is by its marks: `ours`, `adopted`, `unmarked`, or another environment's. */
function ownerOf(bucket, project, environment) {
  const a = bucket.annotations;
  const markedFor = a[marks.project] === project && a[marks.environment] === environment;
  if (a[marks.adopted] === 'true') return markedFor ? 'adopted' : 'other';
  if (bucket.labels[marks.managedBy] === 'tend') return markedFor ? 'ours' : 'other';
  return 'unmarked';
}

/**
 * The environment's bucket, used now: created with tend's marks when there is none (unless
 * `create` is false: then `bucket` is undefined), adopted when one was there before tend (never
 * deleted by tend), refused when it is another environment's; reported first, then its last
 * activity stamped.
 */
async function use(ctx, { create = true } = {}) {
  const env = await environmentOf(ctx);
  const { store, name, project, environment, target } = env;
  const reportAs = (bucket, state, cause) =>
    report(ctx, target, name, bucket, state, cause, project, environment);
  const now = new Date().toISOString();
  let bucket = await store.getBucket(name);
  if (!bucket) {
    reportAs(undefined, 'missing', 'observed');
    if (!create) return { ...env, bucket };
    bucket = await store.createBucket(name, {
      labels: { [marks.managedBy]: 'tend' },
      annotations: { [marks.project]: project, [marks.environment]: environment, [marks.lastActivity]: now },
    });
    if (bucket) {
      reportAs(bucket, 'ready', 'created');
      ctx.events.emit('buckets.bucketCreated', { bucket: name, uid: bucket.uid, store: target.id });
      return { ...env, bucket };
    }
    // Created by someone else in between: treated as any bucket that exists.
    bucket = await store.getBucket(name);
    if (!bucket) throw new TendError('TEND_ACTION_FAILED', `bucket ${name} appeared and went away`);
  }
  reportAs(bucket, 'ready', 'observed');
  const owner = ownerOf(bucket, project, environment);
  if (owner === 'other') {
    const a = bucket.annotations;
    throw new TendError(
      'TEND_ACTION_FAILED',
      `bucket ${name} belongs to ${a[marks.project] ?? '?'}/${a[marks.environment] ?? '?'}, not ${project}/${environment}: left alone`,
    );
  }
  const annotations = { [marks.lastActivity]: now };
  if (owner === 'unmarked') {
    Object.assign(annotations, {
      [marks.adopted]: 'true',
      [marks.project]: project,
      [marks.environment]: environment,
    });
  }
  const stamped = await store.patchBucket(name, { annotations });
  if (!stamped.bucket) throw new TendError('TEND_ACTION_FAILED', `bucket ${name} went away while in use`);
  // Adopted now: reported again, so that the record says it existed before tend used it.
  if (owner === 'unmarked') reportAs(stamped.bucket, 'ready', 'observed');
  return { ...env, bucket: stamped.bucket };
}

/** The pause record on a bucket, or undefined. */
function pauseRecordOf(bucket) {
  const text = bucket.annotations[marks.paused];
  if (text === undefined) return undefined;
  const record = JSON.parse(text);
  if (typeof record?.readOnly !== 'boolean')
    throw new Error(`${marks.paused} of ${text} is not a pause record`);
  return record;
}

/** What a resume did, for people. */
const resumedAs = (record) =>
  `${record.readOnly ? 'read-only' : 'writable'} again, as before the pause of ${record.pausedAt}`;

/**
 * Resume: writes back what the pause recorded (the read-only switch as it was) and removes the
 * record, on the version just read (412: read again and retry). Nothing paused: nothing done.
 */
async function resumeBucket(store, name, bucket) {
  for (let attempt = 0; attempt < 3 && bucket; attempt++) {
    const record = pauseRecordOf(bucket);
    if (!record) return { resumed: false, message: `bucket ${name} is not paused` };
    const patch = { readOnly: record.readOnly, annotations: { [marks.paused]: null } };
    const result = await store.patchBucket(name, patch, bucket.version);
    if (result.bucket) return { resumed: true, message: `bucket ${name}: ${resumedAs(record)}` };
    if (result.gone) break;
    bucket = await store.getBucket(name);
  }
  return { resumed: false, message: `bucket ${name} could not be resumed: it kept changing or went away` };
}

// ---------------------------------------------------------------------------------------------
// The Deploy action type `object`: one object in the environment's bucket.

const keyOf = (action) => action.spec.key ?? action.name;

/** @type {Record<string, (ctx: any, params: any) => Promise<any>>} */
const objectHandlers = {
  /** Read-only: the object as it is; `paused` when current in a bucket a pause made read-only. */
  async getStatus(ctx, { action }) {
    const { store, name, project, environment, target } = await environmentOf(ctx);
    const bucket = await store.getBucket(name);
    report(ctx, target, name, bucket, bucket ? 'ready' : 'missing', 'observed', project, environment);
    if (!bucket) return { state: 'not-ready', reason: `bucket ${name} does not exist` };
    const bytes = await store.getObject(name, keyOf(action));
    if (!bytes || bytes.toString('utf8') !== action.spec.content) return { state: 'not-ready' };
    if (pauseRecordOf(bucket)) {
      return {
        state: 'paused',
        reason: 'paused by cleanup: resumed by the next `tend deploy|test|run` or `tend resume`',
      };
    }
    return { state: 'ready' };
  },
  async deploy(ctx, { action }) {
    const { store, name } = await use(ctx);
    const key = keyOf(action);
    const written = await store.putObject(
      name,
      key,
      Buffer.from(action.spec.content),
      action.spec.contentType,
    );
    ctx.events.emit('buckets.objectWritten', { bucket: name, key, etag: written.etag, size: written.size });
    return { outputs: { bucket: name, key, etag: written.etag } };
  },
  /** The object removed; a bucket that does not exist is not created for it. */
  async delete(ctx, { action }) {
    const { store, name, bucket } = await use(ctx, { create: false });
    if (!bucket) return { state: 'not-ready' };
    const status = await store.deleteObject(name, keyOf(action));
    if (status === 423) throw new TendError('TEND_ACTION_FAILED', `bucket ${name} is read-only`);
    return { state: 'not-ready' };
  },
};

// ---------------------------------------------------------------------------------------------
// Archive and restore: the bucket's objects, written back into a new bucket.

/** Every object of the bucket (paged), with its bytes; the pause record, for the restore to keep. */
async function archiveOf(store, name, bucket, pageSize) {
  const objects = [];
  const notArchived = [];
  let after;
  do {
    const page = await store.listObjects(name, pageSize, after);
    for (const { key, contentType } of page.items) {
      const bytes = await store.getObject(name, key);
      if (bytes === undefined) notArchived.push(`${key}: removed while the bucket was archived`);
      else objects.push({ key, contentType, base64: bytes.toString('base64') });
    }
    after = page.continue;
  } while (after);
  const paused = bucket.annotations[marks.paused];
  return {
    kind: 'plugin',
    pluginName: 'buckets',
    name,
    content: { objects, ...(paused !== undefined ? { paused } : {}) },
    notArchived,
  };
}

/**
 * Re-creates bucket `name` from a buckets archive: a new bucket (the store gives it a new uid;
 * never one that exists: TEND_ARCHIVE), reported `created` before anything is written into it,
 * then the archived objects, each announced with the plugin's own events. A bucket archived
 * paused comes back paused, with its record.
 */
async function restoreInto(ctx, { store, target, name, project, environment }, archive) {
  if (archive.kind !== 'plugin' || archive.pluginName !== 'buckets') {
    throw new TendError('TEND_ARCHIVE', `a ${archive.kind} archive is not of a bucket`);
  }
  const content = archive.content ?? {};
  const bucket = await store.createBucket(name, {
    labels: { [marks.managedBy]: 'tend' },
    annotations: {
      [marks.project]: project,
      [marks.environment]: environment,
      [marks.lastActivity]: new Date().toISOString(),
    },
  });
  if (!bucket) {
    throw new TendError(
      'TEND_ARCHIVE',
      `bucket ${name} exists again: a restore never writes into a bucket it did not create`,
    );
  }
  report(ctx, target, name, bucket, 'ready', 'created', project, environment);
  ctx.events.emit('buckets.bucketCreated', { bucket: name, uid: bucket.uid, store: target.id });
  const restored = [];
  const notRestored = (archive.notArchived ?? []).map((what) => ({ what, why: 'not archived' }));
  for (const object of Array.isArray(content.objects) ? content.objects : []) {
    if (typeof object?.key !== 'string' || typeof object.base64 !== 'string') {
      notRestored.push({ what: String(object?.key).slice(0, 100), why: 'not an object of the archive' });
      continue;
    }
    const written = await store.putObject(
      name,
      object.key,
      Buffer.from(object.base64, 'base64'),
      object.contentType,
    );
    ctx.events.emit('buckets.objectWritten', {
      bucket: name,
      key: object.key,
      etag: written.etag,
      size: written.size,
    });
    restored.push(`object/${object.key}`);
  }
  if (typeof content.paused === 'string') {
    // Paused when archived: read-only again with its record, for the next deploy or `tend resume`.
    const latest = await store.getBucket(name);
    await store.patchBucket(
      name,
      { readOnly: true, annotations: { [marks.paused]: content.paused } },
      latest?.version,
    );
  }
  return { namespace: name, restored, notRestored };
}

// ---------------------------------------------------------------------------------------------
// The cleanup primitives: tend's executors list, read, archive, delete, pause, resume and restore
// through them, and make every safety check themselves before they call one.

/** A bucket with tend's marks, in tend's terms (the inventory's items, and what `read` answers). */
function resourceOf(bucket) {
  const a = bucket.annotations;
  return {
    name: bucket.name,
    uid: bucket.uid,
    // The store's version changes with every change of the bucket: the precondition of an action.
    version: bucket.version,
    state: 'active',
    managedByTend: bucket.labels[marks.managedBy] === 'tend',
    ...(a[marks.project] !== undefined ? { project: a[marks.project] } : {}),
    ...(a[marks.environment] !== undefined ? { environment: a[marks.environment] } : {}),
    role: 'app',
    adopted: a[marks.adopted] === 'true',
    ...(a[marks.lastActivity] !== undefined ? { lastActivityAt: a[marks.lastActivity] } : {}),
    createdAt: bucket.createdAt,
    detail: {
      objects: String(bucket.objectCount),
      bytes: String(bucket.bytes),
      ...(a[marks.paused] !== undefined ? { paused: 'read-only (paused by cleanup)' } : {}),
    },
  };
}

/** The store behind a target: its client, and the target as events carry it. */
function storeOf(ctx, target) {
  const store = storeClient(ctx.provider.config, ctx.signal);
  return { store, recorded: targetOf(store.base, target.state.storeId) };
}

/** An acting primitive's answer to the store's: 412 is `changed`, 404 `gone`. */
const answer = (it, outcome, message) => ({ outcome, message: `${it}: ${message}` });

/**
 * Whether the bucket is still the one the precondition names: its uid and its version. The store's
 * versions come from one counter for all its buckets, so a bucket re-created under the name never
 * has the version of the one it replaced: `If-Match` on the version keeps the uid too.
 */
const holds = (bucket, precondition) =>
  bucket.uid === precondition.uid && bucket.version === precondition.version;

/** @type {Record<string, any>} */
const cleanup = {
  targetKind: 'buckets',
  words: { resource: 'bucket', target: 'store' },
  settingsSchema: Settings,
  // Nothing in the executor's own flags names a store: served only with --set buckets.url=….
  async targets(ctx) {
    const store = storeClient(ctx.provider.config, ctx.signal);
    const { storeId } = await store.info();
    return [
      {
        targetKey: targetKey(targetOf(store.base, storeId)),
        pluginName: 'buckets',
        description: `buckets of the store at ${store.base}`,
        state: { storeId },
      },
    ];
  },
  /** Every bucket with tend's label, page by page; complete only when every page arrived. */
  async inventory(ctx, target) {
    const { store } = storeOf(ctx, target);
    const items = [];
    let after;
    let observedAt;
    try {
      do {
        const page = await store.listBuckets(ctx.provider.config.pageSize, after);
        // A page shorter than it says (more remain, and no way to them) is a truncated list.
        if (page.remaining > 0 && !page.continue) {
          return {
            complete: false,
            error: `the store's list stopped with ${page.remaining} bucket(s) left`,
            items,
          };
        }
        items.push(...page.items.map(resourceOf));
        observedAt ??= page.now;
        after = page.continue;
      } while (after);
    } catch (error) {
      // A page that failed (the store gone, an expired continue token): the list is not whole.
      const why = `listing stopped after ${items.length} bucket(s): ${/** @type {Error} */ (error).message}`;
      return { complete: false, error: why.slice(0, 4000), items };
    }
    return { complete: true, items, ...(observedAt ? { observedAt } : {}) };
  },
  async read(ctx, target, { name }) {
    const bucket = await storeOf(ctx, target).store.getBucket(name);
    return bucket ? resourceOf(bucket) : undefined;
  },
  /** DELETE with If-Match: the uid and version tend checked. A change since (a use) wins. */
  async delete(ctx, target, resource, precondition) {
    const { store, recorded } = storeOf(ctx, target);
    const it = `bucket ${resource.name}`;
    const bucket = await store.getBucket(resource.name);
    if (!bucket) return answer(it, 'gone', 'does not exist (already gone)');
    if (!holds(bucket, precondition)) return answer(it, 'changed', 'changed since the check; left alone');
    const outcome = await store.deleteBucket(resource.name, precondition.version);
    if (outcome === 'stale') return answer(it, 'changed', 'changed since the check; left alone');
    if (outcome === 'gone') return answer(it, 'gone', 'does not exist (already gone)');
    const gone = { uid: precondition.uid };
    report(ctx, recorded, resource.name, gone, 'missing', 'deleted', resource.project, resource.environment);
    return answer(it, 'done', 'deleted');
  },
  /** Read-only: its objects, which tend stores with the server before it deletes the bucket. */
  async archive(ctx, target, resource) {
    const { store } = storeOf(ctx, target);
    const bucket = await store.getBucket(resource.name);
    if (!bucket) throw new Error(`bucket ${resource.name} went away before it was archived`);
    return archiveOf(store, resource.name, bucket, ctx.provider.config.pageSize);
  },
  /** Read-only from now on, with what resume needs: the switch as it was. Paused twice: once. */
  async pause(ctx, target, resource, precondition) {
    const { store } = storeOf(ctx, target);
    const it = `bucket ${resource.name}`;
    const bucket = await store.getBucket(resource.name);
    if (!bucket) return answer(it, 'gone', 'does not exist');
    if (!holds(bucket, precondition)) return answer(it, 'changed', 'changed since the check; left alone');
    if (pauseRecordOf(bucket)) return answer(it, 'done', 'already paused');
    const record = JSON.stringify({ readOnly: bucket.readOnly, pausedAt: new Date().toISOString() });
    const result = await store.patchBucket(
      resource.name,
      { readOnly: true, annotations: { [marks.paused]: record } },
      precondition.version,
    );
    if (result.stale) return answer(it, 'changed', 'changed since the check; left alone');
    if (result.gone) return answer(it, 'gone', 'does not exist');
    return answer(it, 'done', `read-only (was ${bucket.readOnly ? 'read-only' : 'writable'})`);
  },
  /** Writes back exactly what the pause recorded. */
  async resume(ctx, target, resource, precondition) {
    const { store } = storeOf(ctx, target);
    const it = `bucket ${resource.name}`;
    const bucket = await store.getBucket(resource.name);
    if (!bucket) return answer(it, 'gone', 'does not exist');
    if (!holds(bucket, precondition)) return answer(it, 'changed', 'changed since the check; left alone');
    const record = pauseRecordOf(bucket);
    if (!record) return answer(it, 'done', 'not paused');
    const result = await store.patchBucket(
      resource.name,
      { readOnly: record.readOnly, annotations: { [marks.paused]: null } },
      precondition.version,
    );
    if (result.stale) return answer(it, 'changed', 'changed since the check; left alone');
    if (result.gone) return answer(it, 'gone', 'does not exist');
    return answer(it, 'done', resumedAs(record));
  },
  /** What a dry run would change. */
  async preview(_ctx, _target, resource, action) {
    return action === 'delete'
      ? `bucket ${resource.name} (${resource.detail?.objects ?? '?'} object(s))`
      : `bucket ${resource.name} ${action === 'pause' ? 'writable → read-only' : 'read-only → as it was'}`;
  },
  /** A restore job: a new bucket from the archive, reported `created`; tend checked the target and the name. */
  async restore(ctx, target, job, { archive }) {
    const { store, recorded } = storeOf(ctx, target);
    const env = {
      store,
      target: recorded,
      name: job.resourceName,
      project: job.project,
      environment: job.environment,
    };
    return restoreInto(ctx, env, archive);
  },
};

export default {
  name: 'buckets',
  description: 'environments as buckets of an object store, cleaned up by tend',
  configSchema: ProviderConfig,
  emits: ['resourceStatus', 'log'],
  eventTypes,
  provider: {
    async init() {
      return {};
    },
    /** Read-only: the bucket reported `ready` or `missing`, nothing created or stamped. */
    async getEnvironmentStatus(/** @type {any} */ ctx) {
      const { store, name, project, environment, target } = await environmentOf(ctx);
      const bucket = await store.getBucket(name);
      report(ctx, target, name, bucket, bucket ? 'ready' : 'missing', 'observed', project, environment);
      return { ready: bucket !== undefined, detail: { bucket: name, store: store.base } };
    },
    async prepareEnvironment(/** @type {any} */ ctx) {
      const { bucket, store } = await use(ctx);
      return { ready: true, detail: { bucket: bucket.name, uid: bucket.uid, store: store.base } };
    },
    /** `tend resume`, and the start of `tend deploy|test|run`: what a pause recorded, written back. */
    async resumeEnvironment(/** @type {any} */ ctx) {
      const { store, name, project, environment, target } = await environmentOf(ctx);
      const bucket = await store.getBucket(name);
      report(ctx, target, name, bucket, bucket ? 'ready' : 'missing', 'observed', project, environment);
      return bucket
        ? resumeBucket(store, name, bucket)
        : { resumed: false, message: `bucket ${name} does not exist` };
    },
    /** `tend restore`: the bucket re-created from its archive, as a restore job does. */
    async restoreEnvironment(/** @type {any} */ ctx, { archive }) {
      return restoreInto(ctx, await environmentOf(ctx), archive);
    },
    /** `tend cleanup env`: deletes the bucket only when tend created it for this environment. */
    async cleanupEnvironment(/** @type {any} */ ctx) {
      const { store, name, project, environment, target } = await environmentOf(ctx);
      const bucket = await store.getBucket(name);
      report(ctx, target, name, bucket, bucket ? 'ready' : 'missing', 'observed', project, environment);
      if (!bucket) return { deleted: false, message: `bucket ${name} does not exist` };
      const owner = ownerOf(bucket, project, environment);
      if (owner !== 'ours') {
        const whose =
          owner === 'adopted'
            ? 'it existed before tend used it'
            : 'tend did not create it for this environment';
        return { deleted: false, message: `bucket ${name} left alone: ${whose}` };
      }
      const outcome = await store.deleteBucket(name, bucket.version);
      if (outcome === 'stale')
        return { deleted: false, message: `bucket ${name} changed while it was deleted: left alone` };
      report(ctx, target, name, bucket, 'missing', 'deleted', project, environment);
      return { deleted: outcome === 'done', message: `deleted bucket ${name}` };
    },
  },
  actionTypes: [
    {
      name: 'object',
      description: 'one object with the given content, in the environment’s bucket',
      kinds: { Deploy: { specSchema: ObjectSpec, handlers: objectHandlers } },
    },
  ],
  cleanup,
};
