/**
 * The part of @kubernetes/client-node every command that talks to a cluster runs: KubeConfig, which
 * reads the kubeconfig and authenticates requests (every auth kind it knows). connection.ts
 * imports this module lazily. Imported by its module's path, not from the package index, which
 * loads every generated API class and model: the CLI bundle (scripts/bundle.ts) then holds only
 * what KubeConfig uses.
 */
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
