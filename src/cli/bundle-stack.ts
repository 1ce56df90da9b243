/**
 * The stack traces `--debug` prints, with the CLI bundle's frames mapped back to tend's sources:
 * the bundle is minified (scripts/bundle.ts), so a frame of it names a mangled function at a column
 * of a long line; its source map (`dist/cli/tend.cjs.map`, beside it) says which file and line of
 * `src/` (or of a package) that was. Read only here, when a stack is printed. Frames of any other
 * file, and all of them when there is no map (tend run from its sources), stay as they are.
 */
import { existsSync, readFileSync } from 'node:fs';
import type nodeModule from 'node:module';
import type { SourceMap as NodeSourceMap } from 'node:module';
import path from 'node:path';
import { builtinModule } from '../builtin-module.js';

/** `file.cjs:line:column` in a stack frame. */
const bundleFrame = /([^\s()]+\.cjs):(\d+):(\d+)/g;

/** Each bundle's source map, or null when it has none. */
const maps = new Map<string, NodeSourceMap | null>();

function sourceMapOf(file: string): NodeSourceMap | null {
  let map = maps.get(file);
  if (map === undefined) {
    map = null;
    try {
      if (existsSync(`${file}.map`)) {
        const { SourceMap } = builtinModule<typeof nodeModule>('node:module');
        map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as never);
      }
    } catch {
      // An unreadable map: the frames as V8 gave them.
    }
    maps.set(file, map);
  }
  return map;
}

/** The stack with each frame of a bundle that has a source map as `src/…ts:line:column`. */
export function sourceMappedStack(stack: string): string {
  return stack.replace(bundleFrame, (frame, file: string, line: string, column: string) => {
    const map = sourceMapOf(file);
    const entry = map?.findEntry(Number(line) - 1, Number(column) - 1);
    if (!entry || !('originalSource' in entry)) return frame;
    // Named from the package's root: src/config/load.ts, node_modules/yaml/….
    const root = path.resolve(path.dirname(file), '..', '..');
    const source = path.relative(root, path.resolve(path.dirname(file), entry.originalSource));
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
