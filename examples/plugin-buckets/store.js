// @ts-check
/**
 * A small object store over HTTP, the place the `buckets` plugin keeps its environments: buckets
 * with labels and annotations (the plugin's marks), a uid and a creation time of the store's own,
 * and objects. Every change of a bucket — its metadata, its read-only switch, an object written
 * or removed — gives it a new version (its ETag); an update or a deletion with `If-Match` is
 * refused with 412 when the version is stale. Lists are paged (`limit`, `continue`), and the
 * store has an id of its own: its identity, which the plugin uses to name its target.
 *
 *   node store.js --port 9400 --data ./store-data [--token-file F]
 *
 * or, in a test: `const store = await startStore({ dataDir })` → `{ url, token, storeId, close() }`.
 * Everything is kept in `<data>/store.json`, written whole or not at all after each change, so a
 * restart keeps the buckets. No dependencies: node:http only.
 *
 * Routes (JSON unless said; `Authorization: Bearer <token>` when the store has a token):
 *   GET    /                                  {storeId, now}
 *   GET    /buckets?selector=k=v,…&limit=&continue=   {items, continue?, remaining, now}
 *   PUT    /buckets/:name   {labels?, annotations?}   201 the bucket; 409 when it exists
 *   GET    /buckets/:name                     the bucket (ETag: its version); 404
 *   PATCH  /buckets/:name   {labels?, annotations?, readOnly?} (null removes a key); If-Match
 *   DELETE /buckets/:name                     If-Match; 204
 *   GET    /buckets/:name/objects?limit=&continue=    {items: [{key, etag, size, contentType, updatedAt}], continue?, remaining}
 *   PUT    /buckets/:name/objects/:key        the body is the object; 423 when the bucket is read-only
 *   GET    /buckets/:name/objects/:key        the object's bytes (ETag)
 *   DELETE /buckets/:name/objects/:key        204; 423 when the bucket is read-only
 */
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What may name a bucket: one segment of lower-case letters, digits, `.`, `_`, `-`. */
export const bucketNamePattern = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const maxObjectBytes = 8 * 1024 * 1024;
const maxJsonBytes = 1024 * 1024;
const maxPage = 1000;

class StoreError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The data file, written whole or not at all (a temporary file, flushed, then renamed over it). */
function writeAtomically(file, text) {
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}

function loadState(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** A map of strings as labels and annotations are: keys up to 253 characters, values up to 4096. */
function checkedMarks(value, what) {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new StoreError(400, 'invalid', `${what} must be an object of strings`);
  for (const [key, mark] of Object.entries(value)) {
    if (key.length === 0 || key.length > 253 || key.includes('\0'))
      throw new StoreError(400, 'invalid', `${what}: a key must have 1 to 253 characters`);
    if (mark !== null && (typeof mark !== 'string' || mark.length > 4096))
      throw new StoreError(400, 'invalid', `${what}.${key} must be a string of at most 4096 characters`);
  }
  return value;
}

/** `{after, incarnation}` as an opaque token; a token of an earlier run of the store has expired. */
const encodeContinue = (after, incarnation) =>
  Buffer.from(JSON.stringify({ after, incarnation })).toString('base64url');

function decodeContinue(token, incarnation) {
  if (!token) return undefined;
  let parsed;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new StoreError(400, 'invalid', 'continue is not a token of this store');
  }
  if (parsed?.incarnation !== incarnation || typeof parsed.after !== 'string')
    throw new StoreError(410, 'expired', 'the continue token has expired: list again from the start');
  return parsed.after;
}

function pageLimit(searchParams) {
  const raw = searchParams.get('limit');
  if (raw === null) return maxPage;
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPage)
    throw new StoreError(400, 'invalid', `limit must be a whole number from 1 to ${maxPage}`);
  return limit;
}

/** One page of `names` (sorted) after the continue token: the page, the next token, how many remain. */
function page(names, searchParams, incarnation) {
  const after = decodeContinue(searchParams.get('continue'), incarnation);
  const limit = pageLimit(searchParams);
  const rest = after === undefined ? names : names.filter((name) => name > after);
  const taken = rest.slice(0, limit);
  const remaining = rest.length - taken.length;
  return {
    taken,
    remaining,
    ...(remaining > 0 ? { continue: encodeContinue(taken[taken.length - 1], incarnation) } : {}),
  };
}

/** `k=v,k2=v2`: every label must match. */
function selectorOf(text) {
  if (!text) return [];
  return text.split(',').map((term) => {
    const at = term.indexOf('=');
    if (at <= 0) throw new StoreError(400, 'invalid', `selector term "${term}" is not key=value`);
    return [term.slice(0, at), term.slice(at + 1)];
  });
}

function readBody(request, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        reject(new StoreError(413, 'too-large', `the body is over ${limit} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

async function readJson(request) {
  const body = await readBody(request, maxJsonBytes);
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new StoreError(400, 'invalid', 'the body is not JSON');
  }
}

/**
 * The store: its state in memory, saved whole after each change.
 * @param {{ dataDir: string, now?: () => number }} o
 */
function openStore({ dataDir, now = Date.now }) {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'store.json');
  const state = loadState(file) ?? { storeId: randomUUID(), revision: 0, buckets: {} };
  const save = () => writeAtomically(file, JSON.stringify(state));
  save();
  const incarnation = randomUUID();
  const iso = () => new Date(now()).toISOString();

  const bucketOf = (name) => {
    const bucket = Object.hasOwn(state.buckets, name) ? state.buckets[name] : undefined;
    if (!bucket) throw new StoreError(404, 'not-found', `bucket ${name} does not exist`);
    return bucket;
  };
  /** The bucket as the API shows it: everything but its objects' bytes. */
  const view = (name, bucket) => {
    const objects = Object.values(bucket.objects);
    return {
      name,
      uid: bucket.uid,
      version: bucket.version,
      createdAt: bucket.createdAt,
      labels: bucket.labels,
      annotations: bucket.annotations,
      readOnly: bucket.readOnly,
      objectCount: objects.length,
      bytes: objects.reduce((sum, object) => sum + object.size, 0),
    };
  };
  const changed = (bucket) => {
    state.revision += 1;
    bucket.version = String(state.revision);
    save();
  };
  /** `If-Match`: the version the caller last saw; `*` any. A stale one changes nothing (412). */
  const checkMatch = (request, name, bucket) => {
    const header = request.headers['if-match'];
    if (header === undefined || header === '*') return;
    const wanted = String(header).replace(/^"|"$/g, '');
    if (wanted !== bucket.version) {
      throw new StoreError(
        412,
        'stale',
        `bucket ${name} is at version ${bucket.version}, not ${wanted}: it changed since it was read`,
      );
    }
  };
  const writable = (name, bucket) => {
    if (bucket.readOnly) throw new StoreError(423, 'read-only', `bucket ${name} is read-only`);
  };

  return {
    storeId: state.storeId,
    info: () => ({ storeId: state.storeId, now: iso() }),
    list(searchParams) {
      const selector = selectorOf(searchParams.get('selector'));
      const names = Object.keys(state.buckets)
        .filter((name) => selector.every(([key, value]) => state.buckets[name].labels[key] === value))
        .sort();
      const { taken, ...rest } = page(names, searchParams, incarnation);
      return { items: taken.map((name) => view(name, state.buckets[name])), ...rest, now: iso() };
    },
    get: (name) => view(name, bucketOf(name)),
    create(name, body) {
      if (!bucketNamePattern.test(name))
        throw new StoreError(400, 'invalid', `"${name}" cannot name a bucket (${bucketNamePattern})`);
      if (Object.hasOwn(state.buckets, name)) throw new StoreError(409, 'exists', `bucket ${name} exists`);
      const drop = (marks) => Object.fromEntries(Object.entries(marks).filter(([, v]) => v !== null));
      const bucket = {
        uid: randomUUID(),
        createdAt: iso(),
        version: '',
        labels: drop(checkedMarks(body.labels, 'labels')),
        annotations: drop(checkedMarks(body.annotations, 'annotations')),
        readOnly: body.readOnly === true,
        objects: {},
      };
      state.buckets[name] = bucket;
      changed(bucket);
      return view(name, bucket);
    },
    update(request, name, body) {
      const bucket = bucketOf(name);
      checkMatch(request, name, bucket);
      const labels = checkedMarks(body.labels, 'labels');
      const annotations = checkedMarks(body.annotations, 'annotations');
      if (body.readOnly !== undefined && typeof body.readOnly !== 'boolean')
        throw new StoreError(400, 'invalid', 'readOnly must be true or false');
      const merge = (into, marks) => {
        for (const [key, value] of Object.entries(marks)) {
          if (value === null) delete into[key];
          else into[key] = value;
        }
      };
      merge(bucket.labels, labels);
      merge(bucket.annotations, annotations);
      if (body.readOnly !== undefined) bucket.readOnly = body.readOnly;
      changed(bucket);
      return view(name, bucket);
    },
    remove(request, name) {
      const bucket = bucketOf(name);
      checkMatch(request, name, bucket);
      delete state.buckets[name];
      state.revision += 1;
      save();
    },
    listObjects(name, searchParams) {
      const bucket = bucketOf(name);
      const { taken, ...rest } = page(Object.keys(bucket.objects).sort(), searchParams, incarnation);
      const items = taken.map((key) => {
        const { etag, size, contentType, updatedAt } = bucket.objects[key];
        return { key, etag, size, contentType, updatedAt };
      });
      return { items, ...rest };
    },
    putObject(name, key, bytes, contentType) {
      const bucket = bucketOf(name);
      writable(name, bucket);
      const etag = createHash('sha256').update(bytes).digest('hex').slice(0, 32);
      const object = {
        etag,
        size: bytes.length,
        contentType,
        updatedAt: iso(),
        base64: bytes.toString('base64'),
      };
      bucket.objects[key] = object;
      changed(bucket);
      return { key, etag, size: object.size, version: bucket.version };
    },
    getObject(name, key) {
      const bucket = bucketOf(name);
      const object = Object.hasOwn(bucket.objects, key) ? bucket.objects[key] : undefined;
      if (!object) throw new StoreError(404, 'not-found', `bucket ${name} has no object ${key}`);
      return { ...object, bytes: Buffer.from(object.base64, 'base64') };
    },
    deleteObject(name, key) {
      const bucket = bucketOf(name);
      writable(name, bucket);
      if (!Object.hasOwn(bucket.objects, key))
        throw new StoreError(404, 'not-found', `bucket ${name} has no object ${key}`);
      delete bucket.objects[key];
      changed(bucket);
    },
  };
}

/** An object key: 1 to 1024 characters, no NUL. */
function objectKeyOf(encoded) {
  const key = decodeURIComponent(encoded);
  if (key.length === 0 || key.length > 1024 || key.includes('\0'))
    throw new StoreError(400, 'invalid', 'an object key has 1 to 1024 characters and no NUL');
  return key;
}

/** @param {ReturnType<typeof openStore>} store */
async function route(store, request, response) {
  const url = new URL(request.url ?? '/', 'http://store');
  const parts = url.pathname.split('/').filter(Boolean);
  const method = request.method;
  const json = (status, body, headers = {}) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };
  const withVersion = (status, bucket) => json(status, bucket, { etag: `"${bucket.version}"` });
  if (parts.length === 0 && method === 'GET') return json(200, store.info());
  if (parts[0] !== 'buckets') throw new StoreError(404, 'not-found', `no route ${url.pathname}`);
  if (parts.length === 1 && method === 'GET') return json(200, store.list(url.searchParams));
  const name = decodeURIComponent(parts[1] ?? '');
  if (parts.length === 2) {
    if (method === 'GET') return withVersion(200, store.get(name));
    if (method === 'PUT') return withVersion(201, store.create(name, await readJson(request)));
    if (method === 'PATCH') return withVersion(200, store.update(request, name, await readJson(request)));
    if (method === 'DELETE') {
      store.remove(request, name);
      response.writeHead(204).end();
      return;
    }
  }
  if (parts[2] === 'objects' && parts.length === 3 && method === 'GET')
    return json(200, store.listObjects(name, url.searchParams));
  if (parts[2] === 'objects' && parts.length === 4) {
    const key = objectKeyOf(parts[3]);
    if (method === 'PUT') {
      const bytes = await readBody(request, maxObjectBytes);
      const type = String(request.headers['content-type'] ?? 'application/octet-stream');
      return json(200, store.putObject(name, key, bytes, type));
    }
    if (method === 'GET') {
      const object = store.getObject(name, key);
      response.writeHead(200, { 'content-type': object.contentType, etag: `"${object.etag}"` });
      response.end(object.bytes);
      return;
    }
    if (method === 'DELETE') {
      store.deleteObject(name, key);
      response.writeHead(204).end();
      return;
    }
  }
  throw new StoreError(405, 'method', `${method} ${url.pathname} is not a route of the store`);
}

/**
 * Starts the store on 127.0.0.1 (`port` 0: any free one). With `token`, every request must carry
 * it; `now` is the store's clock (its creation times and the time its lists attest).
 * @param {{ dataDir: string, port?: number, token?: string, now?: () => number }} o
 */
export async function startStore({ dataDir, port = 0, token, now }) {
  const store = openStore({ dataDir, now });
  const server = createServer((request, response) => {
    if (token !== undefined && request.headers.authorization !== `Bearer ${token}`) {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'unauthorized', message: 'a bearer token is needed' } }));
      return;
    }
    route(store, request, response).catch((error) => {
      const status = error instanceof StoreError ? error.status : 500;
      const code = error instanceof StoreError ? error.code : 'internal';
      if (!response.headersSent) response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code, message: String(error.message) } }));
    });
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(undefined)));
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${address.port}`,
    token,
    storeId: store.storeId,
    /** Stops it (again: nothing more). */
    close: () =>
      new Promise((resolve) => {
        if (!server.listening) return resolve(undefined);
        server.closeAllConnections();
        server.close(() => resolve(undefined));
      }),
  };
}

/** `--port N --data DIR [--token-file F]` */
async function main(argv) {
  const flag = (name) => {
    const at = argv.indexOf(name);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const dataDir = flag('--data');
  if (!dataDir) {
    process.stderr.write('usage: node store.js --port N --data DIR [--token-file F]\n');
    process.exit(2);
  }
  const tokenFile = flag('--token-file');
  const token = tokenFile ? readFileSync(tokenFile, 'utf8').trim() : undefined;
  const store = await startStore({ dataDir, port: Number(flag('--port') ?? 0), token });
  process.stdout.write(`store ${store.storeId} listening on ${store.url}\n`);
  const stop = () => store.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main(process.argv.slice(2));
}
