/**
 * The `tend` package as a library, for plugin authors: the plugin contract (src/plugin/types.ts),
 * the wire types a cleanup part works with (the inventory's items, the job, its archive, a
 * target's shape) and TendError. The CLI is bin/tend.js; the contract-test harness is
 * `tend/testing` (src/testing/). docs/plugin-api.md shows a complete plugin.
 */
export type * from './plugin/types.js';
export { actionHandlerNames, actionKinds, providerHandlerNames } from './plugin/types.js';
export type {
  CleanupAction,
  CleanupJob,
  CleanupJobState,
  CleanupOutcome,
  InventoryItem,
} from './cleanup/protocol.js';
export type {
  ArchiveMode,
  ArchivedObject,
  EnvironmentArchive,
  KubernetesArchive,
  PluginArchive,
} from './cleanup/archive.js';
export { targetKey, type Target } from './cleanup/targets.js';
export type { CleanupPolicy } from './cleanup/policy.js';
export { TendError, errorCodes, type ErrorCode } from './errors.js';
