/**
 * What the kubernetes plugin works out once per command (and per watch round): the rendered
 * charts and kustomizations, which the version, the status and the deploy of an action read
 * alike, and which Deploy renders each object. Light on purpose: every command forgets them.
 */
import { forgetKustomizeRenderings } from './kustomize.js';

/** `helm template` renderings, by program, arguments and values. */
export const helmRenderings = new Map<string, Promise<string>>();

/** The Deploy that renders each object, by namespace, API group, kind and name. */
export const objectOwners = new Map<string, string>();

/** Forgets it all: a new command (or a watch round) renders again. */
export function forgetCommandMemos(): void {
  forgetKustomizeRenderings();
  helmRenderings.clear();
  objectOwners.clear();
}
