// @ts-check
/**
 * An example third-party tend plugin whose environments are not Kubernetes namespaces but
 * directories under a root it is configured with: the provider `dirs` keeps `<root>/<namespace>`
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

/** The target events carry for a root: the plugin's own kind, its id, the root for people. */
const targetOf = (root, id) => ({
  kind: 'plugin',
  targetKind: 'dirs',
  id,
  label: `directories under ${root}`,
});

/** The provider's view of this call's environment. */
function environmentOf(ctx) {
  const root = path.resolve(ctx.projectRoot, ctx.provider.config.root);
  const name = ctx.environment.namespace;
  if (!namePattern.test(name)) throw new Error(`"${name}" cannot name a directory of ${root}`);
  return { root, name, dir: path.join(root, name) };
}

/** Reports the environment (every call that touches it does, before the work) and stamps its use. */
function report(ctx, root, rootId, name, record, state, cause) {
  ctx.events.emit('namespaceStatus', {
    namespaceName: name,
    ...(record ? { namespaceUid: record.uid } : {}),
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

/** `*` matches within a name, as `--protect-namespace` globs do. */
const globMatches = (glob, name) =>
  new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`).test(name);

/** A name the executor may act on: one directory of the root, not protected; or why not. */
function refusedName(ctx, name) {
  if (!namePattern.test(name)) return `"${name}" names no directory`;
  const { protectNamespaces, systemNamespace } = ctx.protection;
  if (name === systemNamespace || protectNamespaces.some((glob) => globMatches(glob, name))) {
    return `${name} is protected`;
  }
  return undefined;
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

/** @type {Record<string, any>} */
const cleanup = {
  targetKind: 'dirs',
  settingsSchema: Root,
  // Nothing in the executor's own flags says where the root is: served only with --set dirs.root=….
  async targets(ctx) {
    const root = path.resolve(ctx.provider.config.root);
    const id = readRootId(root);
    return id
      ? [
          {
            targetKey: `dirs/${id}`,
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
      if (!record) continue;
      items.push({
        namespaceName: entry.name,
        uid: record.uid,
        version: `${record.uid}@${record.lastActivityAt ?? ''}`,
        state: 'active',
        managedByTend: true,
        project: record.project,
        environment: record.environment,
        role: 'app',
        adopted: false,
        ...(record.lastActivityAt ? { lastActivityAt: record.lastActivityAt } : {}),
        detail: { path: dir },
      });
    }
    // An environment left out would read as gone: a list that could not read one is not complete.
    return unreadable.length > 0
      ? { complete: false, error: `unreadable records: ${unreadable.join('; ')}`.slice(0, 4000), items }
      : { complete: true, items };
  },
  async verifyAndClean(ctx, target, job) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    const recorded = /** @type {{ kind?: unknown, targetKind?: unknown, id?: unknown }} */ (job.target);
    const rootId = target.targetKey.slice('dirs/'.length);
    if (recorded.kind !== 'plugin' || recorded.targetKind !== 'dirs' || recorded.id !== rootId) {
      return { outcome: 'cancelled', message: `the job's target is not ${target.targetKey}` };
    }
    const name = job.namespaceName;
    const refused = refusedName(ctx, name);
    if (refused) return { outcome: 'cancelled', message: refused };
    const dir = path.join(root, name);
    const record = readRecord(dir);
    // The events of this call name the environment as the job does.
    const asRecorded = { events: ctx.events, environment: { project: job.project, name: job.environment } };
    if (!record) {
      report(asRecorded, root, rootId, name, undefined, 'missing', 'observed');
      return { outcome: 'done', message: `${dir} does not exist (already gone)` };
    }
    report(asRecorded, root, rootId, name, record, 'ready', 'observed');
    const refusal =
      record.project !== job.project || record.environment !== job.environment
        ? `it belongs to ${record.project}/${record.environment}`
        : record.uid !== job.namespaceUid
          ? `it was re-created (uid ${record.uid})`
          : record.lastActivityAt &&
              Date.parse(record.lastActivityAt) > Date.parse(job.expectedLastActivityAt)
            ? `used since the decision (at ${record.lastActivityAt})`
            : undefined;
    if (refusal) return { outcome: 'cancelled', message: `${dir} left alone: ${refusal}` };
    if (job.dryRun) return { outcome: 'cancelled', message: `dry run: ${dir} passed every check` };
    if (job.action !== 'delete') {
      return { outcome: 'cancelled', message: `a directory has nothing to ${job.action}` };
    }
    // The server's last word, right before the irreversible step: a session started since the
    // executor's `start` wins.
    const stop = await ctx.confirm?.();
    if (stop) return { outcome: 'cancelled', message: `${dir} left alone: ${stop}` };
    // The server keeps an archive of what it deletes (unless the policy says `archive: false`):
    // stored before the deletion, or no deletion (the hook throws, the job is retried).
    if ((job.archive ?? 'none') !== 'none') {
      if (!ctx.archive) throw new Error(`asked to archive ${dir} with no way to store it`);
      await ctx.archive(archiveOf(dir, name));
    }
    // Out of the way first (atomic), then checked again: a use that stamped the record in between wins.
    const doomed = path.join(root, `.deleting-${record.uid}`);
    rmSync(doomed, { recursive: true, force: true }); // what an interrupted delete of it left
    renameSync(dir, doomed);
    const moved = readRecord(doomed);
    if (moved?.lastActivityAt !== record.lastActivityAt) {
      renameSync(doomed, dir);
      return { outcome: 'cancelled', message: `${dir} left alone: changed since the check` };
    }
    rmSync(doomed, { recursive: true, force: true });
    report(asRecorded, root, rootId, name, record, 'missing', 'deleted');
    return { outcome: 'done', message: `removed ${dir}` };
  },
  /**
   * A restore job (the dashboard's Restore button): the directory created anew — never one that
   * exists — with a new record, reported `created` before anything is written into it, then the
   * archived files.
   */
  async restore(ctx, target, job, { archive }) {
    const { root } = /** @type {{ root: string }} */ (target.state);
    const refused = refusedName(ctx, job.namespaceName);
    if (refused) throw new Error(refused);
    const asRecorded = { events: ctx.events, environment: { project: job.project, name: job.environment } };
    return restoreInto(asRecorded, root, target.targetKey.slice('dirs/'.length), job.namespaceName, archive);
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
  emits: ['namespaceStatus', 'log'],
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
