/**
 * Namespace names tend never cleans, whatever the records say: `kube-*`, `default`, the tend
 * system namespace and the user's `--protect-namespace` globs. The planner and every executor
 * check the same list.
 */
import picomatch from 'picomatch';

/** The tend system namespace unless configured otherwise (`--system-namespace`, `systemNamespace:`). */
export const defaultSystemNamespace = 'tend-system';

export interface NamespaceProtection {
  /** The tend system namespace (builders, shared infrastructure). */
  systemNamespace: string;
  /** Extra name globs (`--protect-namespace`, repeatable), e.g. `prod-*`. */
  patterns: readonly string[];
}

/** A checker for one protection set (globs compiled once): why a name is protected, or undefined. */
export function namespaceProtector(protection: NamespaceProtection): (name: string) => string | undefined {
  const matchers = protection.patterns.map((glob) => ({ glob, match: picomatch(glob, { dot: true }) }));
  return (name) => {
    if (name.startsWith('kube-')) return 'kube-*';
    if (name === 'default') return 'default';
    if (name === protection.systemNamespace) return 'the tend system namespace';
    const hit = matchers.find((m) => m.match(name));
    return hit ? `--protect-namespace ${hit.glob}` : undefined;
  };
}
