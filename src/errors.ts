/**
 * The one error type of tend. Every error a user can see carries a stable `code`
 * (documented in docs/errors.md), a message that says what to do, the exit code
 * the CLI uses, and where it applies (file location, plugin, handler).
 */

/** 130 (128 + SIGINT) is what shells report for a command stopped by Ctrl-C. */
export const ExitCode = { ok: 0, actionFailed: 1, usage: 2, interrupted: 130 } as const;

/** Alphabetised registry of every error code. docs/errors.md documents each one (checked by a test). */
export const errorCodes = {
  TEND_ACTION_DISABLED: ExitCode.usage,
  TEND_ACTION_FAILED: ExitCode.actionFailed,
  TEND_ACTION_NOT_FOUND: ExitCode.usage,
  TEND_ARCHIVE: ExitCode.actionFailed,
  TEND_ARCHIVE_NOT_FOUND: ExitCode.usage,
  TEND_AUTH: ExitCode.usage,
  TEND_AUTH_FORBIDDEN: ExitCode.usage,
  TEND_CLEANUP_BREAKER_OPEN: ExitCode.actionFailed,
  TEND_CLEANUP_CONFLICT: ExitCode.actionFailed,
  TEND_CLEANUP_JOB_NOT_FOUND: ExitCode.usage,
  TEND_CLEANUP_LEASE_LOST: ExitCode.actionFailed,
  TEND_COMMAND_NOT_FOUND: ExitCode.usage,
  TEND_CONFIG_DUPLICATE_ACTION: ExitCode.usage,
  TEND_CONFIG_INVALID: ExitCode.usage,
  TEND_CONFIG_NOT_FOUND: ExitCode.usage,
  TEND_CONFIG_UNKNOWN_KEY: ExitCode.usage,
  TEND_CONFIG_UNSUPPORTED: ExitCode.usage,
  TEND_CONFIG_YAML: ExitCode.usage,
  TEND_DATABASE: ExitCode.actionFailed,
  TEND_DATABASE_NOT_FOUND: ExitCode.usage,
  TEND_ENVIRONMENT_NOT_FOUND: ExitCode.usage,
  TEND_EVENT_INVALID: ExitCode.actionFailed,
  TEND_EVENT_UNDECLARED: ExitCode.actionFailed,
  TEND_EVENT_UNDELIVERABLE: ExitCode.actionFailed,
  TEND_EXEC_FAILED: ExitCode.actionFailed,
  TEND_EXEC_STATE: ExitCode.actionFailed,
  TEND_EXEC_TIMEOUT: ExitCode.actionFailed,
  TEND_GRAPH_CYCLE: ExitCode.usage,
  TEND_GRAPH_MISSING_DEPENDENCY: ExitCode.usage,
  TEND_HANDLER_MISSING: ExitCode.actionFailed,
  TEND_INIT_EXISTS: ExitCode.usage,
  TEND_INIT_GARDEN: ExitCode.usage,
  TEND_INTERNAL: ExitCode.actionFailed,
  TEND_INTERRUPTED: ExitCode.interrupted,
  TEND_K8S_API: ExitCode.actionFailed,
  TEND_K8S_BUILD_FAILED: ExitCode.actionFailed,
  TEND_K8S_CLUSTER_SCOPED: ExitCode.usage,
  TEND_K8S_CONTEXT: ExitCode.usage,
  TEND_K8S_FORBIDDEN: ExitCode.actionFailed,
  TEND_K8S_MANIFEST_INVALID: ExitCode.usage,
  TEND_K8S_NAMESPACE: ExitCode.actionFailed,
  TEND_K8S_NAMESPACE_OTHER_PROJECT: ExitCode.usage,
  TEND_K8S_POD_FAILED: ExitCode.actionFailed,
  TEND_K8S_SYSTEM_NAMESPACE: ExitCode.usage,
  TEND_K8S_TIMEOUT: ExitCode.actionFailed,
  TEND_K8S_UNAUTHORIZED: ExitCode.actionFailed,
  TEND_K8S_UNREACHABLE: ExitCode.actionFailed,
  TEND_LOGS_UNAVAILABLE: ExitCode.actionFailed,
  TEND_LOGS_UNSUPPORTED: ExitCode.usage,
  TEND_PLUGIN_INVALID: ExitCode.usage,
  TEND_PLUGIN_NOT_FOUND: ExitCode.usage,
  TEND_PROVIDER_NOT_FOUND: ExitCode.usage,
  TEND_SECRETS_KEY: ExitCode.actionFailed,
  TEND_SECRET_NOT_FOUND: ExitCode.usage,
  TEND_SERVER: ExitCode.actionFailed,
  TEND_SERVER_BAD_REQUEST: ExitCode.usage,
  TEND_SERVER_NOT_CONFIGURED: ExitCode.usage,
  TEND_SERVER_NOT_FOUND: ExitCode.usage,
  TEND_SERVER_PAYLOAD_TOO_LARGE: ExitCode.usage,
  TEND_TEMPLATE: ExitCode.usage,
  TEND_TOKEN_EXISTS: ExitCode.usage,
  TEND_TOKEN_NOT_FOUND: ExitCode.usage,
  TEND_TOOL_NOT_FOUND: ExitCode.usage,
  TEND_USAGE: ExitCode.usage,
  TEND_WEBHOOK_NOT_FOUND: ExitCode.usage,
  TEND_WORKFLOW_NOT_FOUND: ExitCode.usage,
} as const;

export type ErrorCode = keyof typeof errorCodes;

/** Where in the project's configuration an error applies. Lines and columns are 1-based. */
export interface SourceLocation {
  file: string;
  line: number;
  column: number;
}

export interface TendErrorOptions {
  location?: SourceLocation;
  plugin?: string;
  handler?: string;
  actionRef?: string;
  detail?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * Marks a TendError whatever copy of this module made it: the CLI runs from its bundle
 * (dist/cli/), a plugin module imports TendError from the library (dist/src/index.js), and a
 * plugin's TendError must keep its code when the CLI catches it.
 */
const tendErrorBrand = Symbol.for('tend.TendError');

export class TendError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && tendErrorBrand in value;
  }

  readonly code: ErrorCode;
  readonly exitCode: number;
  readonly location?: SourceLocation;
  readonly plugin?: string;
  readonly handler?: string;
  readonly actionRef?: string;
  readonly detail?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: TendErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TendError';
    this.code = code;
    this.exitCode = errorCodes[code];
    this.location = options.location;
    this.plugin = options.plugin;
    this.handler = options.handler;
    this.actionRef = options.actionRef;
    this.detail = options.detail;
    Object.defineProperty(this, tendErrorBrand, { value: true });
  }

  /** `file:line:col: message`, the form editors and terminals link. */
  override toString(): string {
    const where = this.location
      ? `${this.location.file}:${this.location.line}:${this.location.column}: `
      : '';
    return `${where}${this.message}`;
  }

  toJSON(): { code: ErrorCode; message: string; detail?: Record<string, unknown> } {
    const detail: Record<string, unknown> = { ...this.detail };
    if (this.location) detail.location = this.location;
    if (this.plugin) detail.plugin = this.plugin;
    if (this.handler) detail.handler = this.handler;
    if (this.actionRef) detail.actionRef = this.actionRef;
    return Object.keys(detail).length > 0
      ? { code: this.code, message: this.toString(), detail }
      : { code: this.code, message: this.toString() };
  }
}

/** Any thrown value as a TendError; unknown errors become TEND_INTERNAL and keep their cause. */
export function toTendError(error: unknown): TendError {
  if (error instanceof TendError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TendError('TEND_INTERNAL', message, { cause: error });
}
