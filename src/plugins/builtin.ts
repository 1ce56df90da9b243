/**
 * The plugins shipped with tend. Heavy plugins (kubernetes) are imported only when a project's
 * configuration uses them, so light commands stay fast.
 */
import type { LoadedPlugin } from '../plugin/types.js';
import { execPlugin } from './exec/index.js';
import { kubernetesPlugin } from './kubernetes/index.js';

export function builtinPlugins(): LoadedPlugin[] {
  return [execPlugin, kubernetesPlugin];
}
