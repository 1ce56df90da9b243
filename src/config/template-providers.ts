/**
 * `providers.*` of the template context (template-context.ts): a provider's outputs, known once
 * the command prepared it, and its configuration (Garden's ProviderContext has both), known when
 * the configuration is read.
 */
import { followPath, Missing, RecordNode } from '../expressions/evaluate.js';
import type { PathNode } from '../expressions/evaluate.js';

/** The providers an environment uses (by tend's name), and each one's configuration, resolved when first read. */
export interface ProviderConfigs {
  names: readonly string[];
  config(name: string): Record<string, unknown> | undefined;
}

/** What each provider's preparation gave: `providers.<name>.outputs`. */
export type ProviderOutputs = Record<string, { outputs: Record<string, unknown> }>;

/**
 * `providers.<name>.outputs.*`: known once the command prepared its providers;
 * `providers.<name>.config.*`: known when the configuration is read.
 */
export class ProvidersNode implements PathNode {
  constructor(
    private readonly providers: ProviderOutputs | undefined,
    private readonly configs: ProviderConfigs | undefined,
  ) {}

  resolvePath(path: readonly (string | number)[], text: string): unknown {
    const [written, field] = path.map(String);
    if ((field !== 'outputs' && field !== 'config') || written === undefined) {
      return new Missing(
        `invalid provider reference "${text}"; expected providers.<name>.outputs.<key> or providers.<name>.config.<key>`,
      );
    }
    // Garden's local-kubernetes is tend's kubernetes provider.
    const name = written === 'local-kubernetes' ? 'kubernetes' : written;
    const below = path.slice(2);
    const prefix = `providers.${written}.${field}`;
    if (field === 'config') {
      if (!this.configs) return new Missing(`provider configuration is not available for "${text}" here`);
      const config = this.configs.config(name);
      if (!config) return noProvider(written, text, this.configs.names);
      return followPath(new RecordNode(config), below, prefix, text);
    }
    if (!this.providers) {
      return new Missing(
        `provider outputs are not available for "${text}": providers are prepared by tend build, deploy, test and run`,
        true,
      );
    }
    const provider = Object.hasOwn(this.providers, name) ? this.providers[name] : undefined;
    if (!provider) return noProvider(written, text, Object.keys(this.providers));
    return followPath(new RecordNode(provider.outputs), below, prefix, text);
  }
}

function noProvider(name: string, text: string, names: readonly string[]): Missing {
  return new Missing(`no provider ${name} for "${text}"; providers: ${names.join(', ') || '(none)'}`);
}
