// @ts-check
/**
 * An example third-party tend plugin whose environments are not Kubernetes namespaces but
 * directories under a root it is configured with: the provider `dirs` keeps `<root>/<resource name>`
 * (with a record file proving tend created it), the Deploy action type `file` writes one file into
 * it, and the `cleanup` part lets tend's executors list, archive and delete idle environments
 * and restore a deleted one from its archive — with no file of tend naming this plugin. Its
 * target kind is `dirs`; a root is one target, named by the id in `<root>/.tend-root`. See
 * docs/plugin-api.md#cleanup.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Type } from 'typebox';

/** The provider entry's own keys; the same `root` is the executor's setting (`--set dirs.root=…`). */
const Root = Type.Object(
  { root: Type.String({ minLength: 1, description: 'the directory environments are created in' }) },
  { additionalProperties: false },
);

const FileSpec = Type.Object({ content: Type.String({ maxLength: 65536 }) }, { additionalProperties: false });

const recordFile = '.tend-dir.json';
const rootIdFile = '.tend-root';
/** What may name an environment directory: one path segment, never `.` or `..`. */
const namePattern = /^[a-z0-9][a-z0-9._-]{0,252}$/;

/** A file written whole or not at all. */
function writeAtomically(file, text) {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

/** The root's id, or undefined when nothing was ever created there. */
function readRootId(root) {
  try {
    return readFileSync(path.join(root, rootIdFile), 'utf8').trim() || undefined;
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return undefined;
    throw error;
  }
}

function ensureRootId(root) {
  mkdirSync(root, { recursive: true });
  const id = readRootId(root);
  if (id) return id;
  writeAtomically(path.join(root, rootIdFile), randomUUID());
  return /** @type {string} */ (readRootId(root));
}

/** An environment's record, or undefined when there is none; a record that cannot be read throws. */
function readRecord(dir) {
  let text;
  try {
    text = readFileSync(path.join(dir, recordFile), 'utf8');
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return undefined;
    throw error;
  }
  const record = JSON.parse(text);
  if (typeof record?.uid !== 'string' || typeof record.project !== 'string') {
    throw new Error(`${path.join(dir, recordFile)} is not an environment record`);
  }
  return record;
}

/**
 * The target of a root — the plugin's own kind, its id, the root for people — stated once: its
 * events carry it, and `targets()` serves its key, `<targetKind>/<id>`.
 */
const targetOf = (root, id) => ({
  kind: 'plugin',
  targetKind: 'dirs',
  id,
  label: `directories under ${root}`,
});
const keyOf = (target) => `${target.targetKind}/${target.id}`;

/** The provider's view of this call's environment. */
function environmentOf(ctx) {
  const root = path.resolve(ctx.projectRoot, ctx.provider.config.root);
  const name = ctx.environment.resourceName;
  if (!namePattern.test(name)) throw new Error(`"${name}" cannot name a directory of ${root}`);
  return { root, name, dir: path.join(root, name) };
}

/** Reports the environment (every call that touches it does, before the work) and stamps its use. */
function report(ctx, root, rootId, name, record, state, cause) {
  ctx.events.emit('resourceStatus', {
    resourceName: name,
    ...(record ? { resourceUid: record.uid } : {}),
    state,
    role: 'app',
    cause,
    target: targetOf(root, rootId),
    project: ctx.environment?.project ?? record?.project,
    environment: ctx.environment?.name ?? record?.environment,
  });
}

/** The environment as it is, used now: reported, its record's activity stamped. */
function use(ctx) {
  const { root, name, dir } = environmentOf(ctx);
  const rootId = ensureRootId(root);
  let record = readRecord(dir);
  let cause = 'observed';
  if (!record) {
    mkdirSync(dir, { recursive: false });
    record = { uid: randomUUID(), project: ctx.environment.project, environment: ctx.environment.name };
    cause = 'created';
  } else if (record.project !== ctx.environment.project || record.environment !== ctx.environment.name) {
    throw new Error(`${dir} belongs to ${record.project}/${record.environment}`);
  }
  record.lastActivityAt = new Date().toISOString();
  report(ctx, root, rootId, name, record, 'ready', cause);
  writeAtomically(path.join(dir, recordFile), JSON.stringify(record));
  return { dir, record };
}

/** @type {Record<string, (ctx: any, params: any) => Promise<any>>} */
const fileHandlers = {
  async getStatus(ctx, { action }) {
    const { dir } = environmentOf(ctx);
    try {
      return {
        state:
          readFileSync(path.join(dir, action.name), 'utf8') === action.spec.content ? 'ready' : 'not-ready',
      };
    } catch {
      return { state: 'not-ready' };
    }
  },
  async deploy(ctx, { action }) {
    const { dir } = use(ctx);
    writeAtomically(path.join(dir, action.name), action.spec.content);
    return { outputs: { path: path.join(dir, action.name) } };
  },
  async delete(ctx, { action }) {
    const { dir } = use(ctx);
    rmSync(path.join(dir, action.name), { force: true });
    return { state: 'not-ready' };
  },
};

/** A directory with a record, in tend's terms (the inventory's items, and what `read` answers). */
function resourceOf(dir, record) {
  return {
    name: path.basename(dir),
    uid: record.uid,
    // Changes whenever a use stamps the record: the precondition of a deletion.
    version: `${record.uid}@${record.lastActivityAt ?? ''}`,
    state: 'active',
    managedByTend: true,
    project: record.project,
    environment: record.environment,
    role: 'app',
    adopted: false,
    ...(record.lastActivityAt ? { lastActivityAt: record.lastActivityAt } : {}),
    detail: { path: dir },
  };
}

/** The environment's archive: its files (the record aside), for `restore` to write back. */
function archiveOf(dir, name) {
  const files = [];
  const notArchived = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === recordFile) continue;
    if (!entry.isFile()) {
      notArchived.push(`${entry.name}: not a file`);
      continue;
    }
    files.push({ name: entry.name, base64: readFileSync(path.join(dir, entry.name)).toString('base64') });
  }
  return { kind: 'plugin', pluginName: 'dirs', name, content: { files }, notArchived };
}

/** A file name of an archive that writes into the directory itself: one segment, not the record. */
const isFileName = (name) =>
  typeof name === 'string' && name === path.basename(name) && !['', '.', '..', recordFile].includes(name);

/**
 * The cleanup primitives: tend's executors list, read and delete through them, and make every
 * safety check themselves (the target, protection, project, environment, uid, activity, dry run,
 * the server's last word) before they call `delete`.
 * @type {Record<string, any>}
 */
const cleanup = {
  targetKind: 'dirs',
  words: { resource: 'directory', target: 'root' },
  settingsSchema: Root,
  // Nothing in the executor's own flags says where the root is: served only with --set dirs.root=….
  async targets(ctx) {
    const root = path.resolve(ctx.provider.config.root);
    const id = readRootId(root);
    return id
      ? [
          {
            targetKey: keyOf(targetOf(root, id)),
            pluginName: 'dirs',
            description: `directories under ${root}`,
            state: { root },
          },
        ]
      : [];
  },
  async inventory(_ctx, target) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    const items = [];
    const unreadable = [];
    for (const entry of readdirSync(root, { withFileTypes: true })) {
      if (!entry.isDirectory() || !namePattern.test(entry.name)) continue;
      const dir = path.join(root, entry.name);
      let record;
      try {
        record = readRecord(dir);
      } catch (error) {
        unreadable.push(`${entry.name}: ${/** @type {Error} */ (error).message}`);
        continue;
      }
      // A directory without a record is not tend's: like an unlabelled namespace, not listed.
      if (record) items.push(resourceOf(dir, record));
    }
    // An environment left out would read as gone: a list that could not read one is not complete.
    return unreadable.length > 0
      ? { complete: false, error: `unreadable records: ${unreadable.join('; ')}`.slice(0, 4000), items }
      : { complete: true, items };
  },
  /** The directory as it is now, or undefined when it has no record. */
  async read(_ctx, target, { name }) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    const dir = path.join(root, name);
    const record = readRecord(dir);
    return record ? resourceOf(dir, record) : undefined;
  },
  /** Moved aside atomically, then its record compared with the precondition: a use in between wins. */
  async delete(ctx, target, resource, precondition) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    const rootId = target.targetKey.slice('dirs/'.length);
    const dir = path.join(root, resource.name);
    const doomed = path.join(root, `.deleting-${precondition.uid}`);
    rmSync(doomed, { recursive: true, force: true }); // what an interrupted delete of it left
    try {
      renameSync(dir, doomed);
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT')
        return { outcome: 'gone', message: `${dir} does not exist (already gone)` };
      throw error;
    }
    const moved = readRecord(doomed);
    if (!moved || moved.uid !== precondition.uid || resourceOf(dir, moved).version !== precondition.version) {
      renameSync(doomed, dir);
      return { outcome: 'changed', message: `${dir} left alone: changed since the check` };
    }
    rmSync(doomed, { recursive: true, force: true });
    const asRecorded = {
      events: ctx.events,
      environment: { project: moved.project, name: moved.environment },
    };
    report(asRecorded, root, rootId, resource.name, moved, 'missing', 'deleted');
    return { outcome: 'done', message: `removed ${dir}` };
  },
  /** Read-only: the directory's files, which tend stores with the server before it deletes it. */
  async archive(_ctx, target, resource) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    return archiveOf(path.join(root, resource.name), resource.name);
  },
  /**
   * A restore job (the dashboard's Restore button): the directory created anew — never one that
   * exists — with a new record, reported `created` before anything is written into it, then the
   * archived files. tend has checked the target and the name (never a protected one).
   */
  async restore(ctx, target, job, { archive }) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    const asRecorded = { events: ctx.events, environment: { project: job.project, name: job.environment } };
    return restoreInto(asRecorded, root, target.targetKey.slice('dirs/'.length), job.resourceName, archive);
  },
};

/**
 * Re-creates `<root>/<name>` from a dirs archive: a new directory (EEXIST: never one that exists)
 * with a new record, reported `created` before anything is written into it, then the files.
 */
function restoreInto(ctx, root, rootId, name, archive) {
  if (archive.kind !== 'plugin' || archive.pluginName !== 'dirs') {
    throw new Error(`a ${archive.kind} archive is not of a dirs environment`);
  }
  const dir = path.join(root, name);
  mkdirSync(dir);
  const { project, name: environment } = ctx.environment;
  const record = { uid: randomUUID(), project, environment, lastActivityAt: new Date().toISOString() };
  report(ctx, root, rootId, name, record, 'ready', 'created');
  writeAtomically(path.join(dir, recordFile), JSON.stringify(record));
  const restored = [];
  const notRestored = archive.notArchived.map((what) => ({ what, why: 'not archived' }));
  for (const file of archive.content?.files ?? []) {
    if (!isFileName(file?.name) || typeof file.base64 !== 'string') {
      notRestored.push({ what: String(file?.name).slice(0, 100), why: 'not a file name of the directory' });
      continue;
    }
    writeAtomically(path.join(dir, file.name), Buffer.from(file.base64, 'base64'));
    restored.push(`file/${file.name}`);
  }
  return { namespace: name, restored, notRestored };
}

export default {
  name: 'dirs',
  description: 'environments as directories under a root, cleaned up by tend',
  configSchema: Root,
  emits: ['resourceStatus', 'log'],
  provider: {
    async init() {
      return {};
    },
    /** @param {any} ctx */
    async getEnvironmentStatus(ctx) {
      const { root, name, dir } = environmentOf(ctx);
      const rootId = readRootId(root);
      const record = rootId ? readRecord(dir) : undefined;
      // Read-only: a root never used holds no environment to report.
      if (rootId) report(ctx, root, rootId, name, record, record ? 'ready' : 'missing', 'observed');
      return { ready: record !== undefined, detail: { path: dir } };
    },
    /** @param {any} ctx */
    async prepareEnvironment(ctx) {
      const { dir, record } = use(ctx);
      return { ready: true, detail: { path: dir, uid: record.uid } };
    },
    /** `tend restore`: the environment's directory re-created from its archive, as a restore job does. */
    async restoreEnvironment(/** @type {any} */ ctx, { archive }) {
      const { root, name } = environmentOf(ctx);
      return restoreInto(ctx, root, ensureRootId(root), name, archive);
    },
    /** @param {any} ctx */
    async cleanupEnvironment(ctx) {
      const { root, name, dir } = environmentOf(ctx);
      const rootId = readRootId(root);
      const record = rootId ? readRecord(dir) : undefined;
      if (!rootId || !record) return { deleted: false, message: `${dir} does not exist` };
      if (record.project !== ctx.environment.project || record.environment !== ctx.environment.name) {
        return {
          deleted: false,
          message: `${dir} belongs to ${record.project}/${record.environment}: left alone`,
        };
      }
      rmSync(dir, { recursive: true, force: true });
      report(ctx, root, rootId, name, record, 'missing', 'deleted');
      return { deleted: true, message: `removed ${dir}` };
    },
  },
  actionTypes: [
    {
      name: 'file',
      description: 'one file with the given content, in the environment directory',
      kinds: { Deploy: { specSchema: FileSpec, handlers: fileHandlers } },
    },
  ],
  cleanup,
};
