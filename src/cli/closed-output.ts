/**
 * A reader that went away: `tend validate --json | head -1`, `tend events --follow | grep -m1 x`.
 * Writing to a pipe nobody reads fails with EPIPE, which Node reports as an 'error' event on
 * process.stdout (or stderr) — unhandled, a crash with a stack. C programs do not see it: the
 * kernel's SIGPIPE ends them first, quietly, and the shell reports 141 (128 + 13). Node ignores
 * SIGPIPE, so tend ends itself that way, whatever command runs.
 */

/** Installs the handlers on stdout and stderr; once per process (main does it first). */
export function endQuietlyWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error; // as if nobody listened: not ours to hide
      exitAsPipeClosed();
    });
  }
}

/** SIGPIPE's own exit status in a shell: 128 + the signal's number. */
export const pipeClosedExitCode = 141;

function exitAsPipeClosed(): void {
  // Listening to a signal and stopping makes libuv put back the default action, which Node had
  // set to "ignore": the signal then ends the process as it ends any program writing to a
  // closed pipe. Should it not (a runtime that keeps ignoring it), the same status by exit().
  const ignore = () => {};
  process.on('SIGPIPE', ignore);
  process.off('SIGPIPE', ignore);
  process.kill(process.pid, 'SIGPIPE');
  process.exit(pipeClosedExitCode);
}
