/**
 * The settings of the server's cleanup (`--cleanup-interval`, `--cleanup-max-per-pass`,
 * `--protect-namespace`, `--system-namespace`, the archive flags) and their defaults: the planner's, and the job
 * queue's leases and retries.
 */
import { defaultArchiveMaxBytes } from '../../cleanup/archive.js';
import { defaultSystemNamespace } from '../../cleanup/protection.js';
import type { ArchiveSettings } from './archives.js';
import type { PlannerSettings } from './planner/types.js';

export interface CleanupSettings extends PlannerSettings {
  /** Lease of a claimed job when the executor asks for none (ms). */
  defaultLeaseMs: number;
  /** Attempts before a failing job is given up (each retried after a backoff). */
  maxAttempts: number;
  /** The archives taken before deletions (`--archive-retention`, `--archive-max-size`, `--archive-key-file`). */
  archive: ArchiveSettings;
}

export const defaultArchiveRetentionMs = 7 * 86_400_000;

export const defaultCleanupSettings: CleanupSettings = {
  intervalMs: 30_000,
  maxPerPass: 10,
  systemNamespace: defaultSystemNamespace,
  protectPatterns: [],
  defaultLeaseMs: 120_000,
  maxAttempts: 5,
  archive: { retentionMs: defaultArchiveRetentionMs, maxBytes: defaultArchiveMaxBytes },
};
