/**
 * The checks of the cleanup conformance kit and what each found: pass, fail (with every broken
 * promise in a sentence), or not applicable (the plugin has no such primitive: never a failure).
 */
export type CleanupCheckName =
  | 'targets'
  | 'inventory'
  | 'read'
  | 'preconditions'
  | 'dry-run'
  | 'protection'
  | 'hostile-jobs'
  | 'pause-resume'
  | 'archive'
  | 'restore'
  | 'delete';

export interface CleanupCheckResult {
  check: CleanupCheckName;
  status: 'pass' | 'fail' | 'not-applicable';
  /** What was verified, what broke, or why the check does not apply. */
  sentence: string;
}

/** What a check's body says when the plugin has nothing for it to check. */
export class NotApplicable {
  constructor(readonly why: string) {}
}

/** The broken promises a check found, in order. */
export class Findings {
  readonly problems: string[] = [];

  /** Records `problem` unless `ok`; returns `ok`. */
  expect(ok: boolean, problem: string): boolean {
    if (!ok) this.problems.push(problem);
    return ok;
  }
}

/**
 * Runs one check: its body returns what it verified (or NotApplicable); every problem it found,
 * or its throw, makes the check fail.
 */
export async function runCheck(
  check: CleanupCheckName,
  body: (findings: Findings) => Promise<string | NotApplicable>,
): Promise<CleanupCheckResult> {
  const findings = new Findings();
  let verified: string | NotApplicable;
  try {
    verified = await body(findings);
  } catch (error) {
    findings.problems.push(`threw: ${error instanceof Error ? error.message : String(error)}`);
    return { check, status: 'fail', sentence: findings.problems.join('; ') };
  }
  if (findings.problems.length > 0) return { check, status: 'fail', sentence: findings.problems.join('; ') };
  if (verified instanceof NotApplicable) return { check, status: 'not-applicable', sentence: verified.why };
  return { check, status: 'pass', sentence: verified };
}

/** An error's message and code, for a sentence. */
export function describeError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${code}: ${message}` : message;
}
