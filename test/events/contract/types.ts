/** The shape of a plugin's rows in the event contract test (test/events/contract.test.ts). */
import type { NamespaceStatusPayload } from '../../../src/events/catalog.js';
import type { ExecutorFlags } from '../../../src/plugin/types.js';

export interface ExpectedNamespaceEvent {
  /** `app` namespace of the environment, or a literal namespace name. */
  namespace: 'app' | string;
  state: NamespaceStatusPayload['state'];
  cause: NamespaceStatusPayload['cause'];
  role: NamespaceStatusPayload['role'];
}

export interface ContractRow {
  /** `provider.<handler>` or `<Kind>.<type>.<handler>`, e.g. `Build.exec.build`. */
  handler: string;
  /** The environment before the call: `fresh` (never prepared) or `prepared`. */
  given: 'fresh' | 'prepared';
  /** The action to call the handler for (its ref in the fixture project). */
  action?: string;
  expect: ExpectedNamespaceEvent[];
}

export interface PluginFixture {
  /** Files of a project that configures the plugin (and exec, if it needs it). */
  files: Record<string, string>;
  env?: Record<string, string>;
  /** Project variables (`--var k=v`), e.g. to select a build mode. */
  vars?: string[];
  teardown?: () => Promise<void>;
}

export interface PluginContract {
  plugin: string;
  /** Fixtures by name; each row runs against the fixture `variant` (default `default`). */
  fixtures: () => Promise<Record<string, PluginFixture>>;
  rows: (ContractRow & { variant?: string })[];
  /**
   * The cleanup contract (test/events/cleanup-contract.test.ts): the executor flags under which
   * the plugin serves the environment it recorded, and the host id the executor runs as.
   */
  executor?: (recorded: NamespaceStatusPayload) => { flags: ExecutorFlags; hostId?: string };
}
