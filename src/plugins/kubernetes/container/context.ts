/**
 * The build context of a `container` Build: the action's source files (after include/exclude)
 * minus what `.dockerignore` excludes, plus the Dockerfile, packed into a tar archive in a
 * temporary file so that a retried upload can send it again.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type * as tarModule from 'tar';
import { TendError } from '../../../errors.js';
import { importModule } from '../../../import-module.js';
import type { ResolvedAction } from '../../../plugin/types.js';

export interface BuildContext {
  file: string;
  files: string[];
  dockerfile: string;
  remove(): void;
}

export async function packContext(
  action: ResolvedAction,
  dockerfile: string,
  tendDir: string,
  gzip: boolean,
): Promise<BuildContext> {
  if (!existsSync(action.sourceDir) || !statSync(action.sourceDir).isDirectory()) {
    throw new TendError(
      'TEND_K8S_BUILD_FAILED',
      `${action.ref}: the build context directory ${action.sourceDir} does not exist`,
      { actionRef: action.ref, detail: { hint: 'check `source:` of the action' } },
    );
  }
  const dockerfilePath = path.resolve(action.sourceDir, dockerfile);
  const relativeDockerfile = path.relative(action.sourceDir, dockerfilePath).split(path.sep).join('/');
  if (relativeDockerfile.startsWith('..') || path.isAbsolute(relativeDockerfile)) {
    throw new TendError(
      'TEND_K8S_BUILD_FAILED',
      `${action.ref}: the Dockerfile ${dockerfile} is outside the build context ${action.sourceDir}`,
      { actionRef: action.ref },
    );
  }
  if (!existsSync(dockerfilePath)) {
    throw new TendError('TEND_K8S_BUILD_FAILED', `${action.ref}: no Dockerfile at ${dockerfilePath}`, {
      actionRef: action.ref,
      detail: { hint: 'set spec.dockerfile, relative to the action source' },
    });
  }
  const { default: ignore } = await import('ignore');
  const rules = ignore();
  const dockerignore = path.join(action.sourceDir, '.dockerignore');
  if (existsSync(dockerignore)) rules.add(readFileSync(dockerignore, 'utf8'));
  const files = action.files.filter((f) => !rules.ignores(f));
  if (!files.includes(relativeDockerfile)) files.push(relativeDockerfile);
  const dir = path.join(tendDir, 'tmp');
  mkdirSync(dir, { recursive: true });
  const file = path.join(
    dir,
    `context-${action.name}-${randomBytes(4).toString('hex')}.tar${gzip ? '.gz' : ''}`,
  );
  const tar = await importModule<typeof tarModule>('tar');
  await tar.c({ cwd: action.sourceDir, file, gzip, portable: true, noDirRecurse: true }, files);
  return {
    file,
    files,
    dockerfile: relativeDockerfile,
    remove: () => rmSync(file, { force: true }),
  };
}
