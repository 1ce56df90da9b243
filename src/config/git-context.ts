/**
 * `${git.branch}`, `${git.commitHash}`, `${git.originUrl}`: read from the project's repository
 * with git, each only when a template uses it (most commands never do: no git process then).
 */
import type childProcess from 'node:child_process';
import { builtinModule } from '../builtin-module.js';
import { Lazy, Missing } from '../expressions/evaluate.js';

function gitOutput(root: string, args: string[], key: string): string | Missing {
  try {
    // Loaded here, not on import: a command whose templates never read git loads no child_process.
    const { execFileSync } = builtinModule<typeof childProcess>('node:child_process');
    return execFileSync('git', args, {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    }).trim();
  } catch {
    return new Missing(
      `git.${key} is not available: ${root} is not in a git repository with one (or git is not installed); ` +
        `give a default, e.g. \${git.${key} || "none"}`,
    );
  }
}

/** The `git` root of a template context for a project root. */
export function gitContext(root: string): Record<string, Lazy> {
  return {
    branch: new Lazy(() => gitOutput(root, ['rev-parse', '--abbrev-ref', 'HEAD'], 'branch')),
    commitHash: new Lazy(() => gitOutput(root, ['rev-parse', 'HEAD'], 'commitHash')),
    originUrl: new Lazy(() => gitOutput(root, ['config', '--get', 'remote.origin.url'], 'originUrl')),
  };
}
