/**
 * A Deploy's `files:` glob patterns expanded (loaded by manifests.ts only when an entry is a
 * pattern: fast-glob and picomatch cost a command that names plain paths ~25 ms to load).
 */
import fg from 'fast-glob';
import picomatch from 'picomatch';

/** Never manifests, whatever a pattern says: tend's configuration and state, VCS data, installed dependencies. */
const neverManifests = ['**/.tend/**', '**/.git/**', '**/node_modules/**', '**/tend.yml', '**/*.tend.yml'];

/**
 * A matcher of paths relative to the source directory, where `**` also stands for the `../` steps
 * of a path outside it (picomatch's never matches `..`): a pattern `**` + `/local-*.yaml` matches
 * `../deploy/local-dev.yaml` too.
 */
function matcher(patterns: string[]): (file: string) => boolean {
  const matches = picomatch(patterns, { dot: true });
  const anyDepth = patterns.filter((pattern) => pattern.startsWith('**'));
  const matchesAnyDepth = anyDepth.length > 0 ? picomatch(anyDepth, { dot: true }) : () => false;
  return (file) =>
    matches(file) || (file.startsWith('../') && matchesAnyDepth(file.replace(/^(\.\.\/)+/, '')));
}

/** A pattern's matches relative to the source directory, in path order, without what is left out. */
export function globMatches(sourceDir: string, pattern: string, leftOut: readonly string[]): string[] {
  const excluded = matcher([...neverManifests, ...leftOut]);
  // fast-glob's `ignore` saves reading node_modules; the matcher also sees paths outside the source.
  return fg
    .sync(pattern, { cwd: sourceDir, onlyFiles: true, ignore: neverManifests })
    .filter((file) => !excluded(file))
    .sort();
}
