/**
 * The `tend` package as a library, for plugin authors: the plugin contract (src/plugin/types.ts)
 * and TendError. The CLI is bin/tend.js; the contract-test harness is `tend/testing`
 * (src/testing/). docs/plugin-api.md shows a complete plugin.
 */
export type * from './plugin/types.js';
export { actionHandlerNames, actionKinds, providerHandlerNames } from './plugin/types.js';
export { TendError, errorCodes, type ErrorCode } from './errors.js';
