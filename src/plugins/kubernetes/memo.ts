/**
 * What the kubernetes plugin works out once per command (and per watch round): the rendered
 * charts and kustomizations, which the version, the status and the deploy of an action read
 * alike, and which Deploy renders each object. Light on purpose: every command forgets them.
 */

/** Renderings by key, each run once; a failure is not kept (the next call says it again, or succeeds once fixed). */
export class Renderings {
  private readonly byKey = new Map<string, Promise<string>>();

  get(key: string, render: () => Promise<string>): Promise<string> {
    let rendering = this.byKey.get(key);
    if (!rendering) {
      rendering = render();
      this.byKey.set(key, rendering);
      rendering.catch(() => this.byKey.delete(key));
    }
    return rendering;
  }

  clear(): void {
    this.byKey.clear();
  }
}

/** `helm template` renderings, by program, arguments and values. */
export const helmRenderings = new Renderings();

/** `kustomize build` renderings, by program, directory, source and extra arguments. */
export const kustomizeRenderings = new Renderings();

/** The Deploy that renders each object, by namespace, API group, kind and name. */
export const objectOwners = new Map<string, string>();

/** Forgets it all: a new command (or a watch round) renders again. */
export function forgetCommandMemos(): void {
  helmRenderings.clear();
  kustomizeRenderings.clear();
  objectOwners.clear();
}
