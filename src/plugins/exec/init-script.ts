/**
 * The exec provider's `initScript`, as Garden runs it: once per command that prepares the
 * environment (tend build, deploy, test, run), with `sh -c` in the project root, before any
 * action. Its standard output, trimmed, is the provider's output `initScript.log`
 * (`${providers.exec.outputs.initScript.log}` in action templates); a script that fails stops the
 * command.
 */
import { TendError } from '../../errors.js';
import type { PluginContext, PluginLog } from '../../plugin/types.js';
import { runCommand } from './process.js';

export async function runInitScript(
  ctx: PluginContext,
  script: string,
): Promise<{ initScript: { log: string } }> {
  const stdout: string[] = [];
  const log: PluginLog = {
    ...ctx.log,
    output(stream, line) {
      if (stream === 'stdout') stdout.push(line);
      ctx.log.output(stream, line);
    },
  };
  ctx.log.info("running the exec provider's initScript");
  const result = await runCommand(
    { command: ['sh', '-c', script], cwd: ctx.projectRoot, env: {} },
    log,
    ctx.signal,
  );
  if (result.exitCode !== 0) {
    // The output is all there is to say why (a tool it runs missing, say), as Garden prints it.
    const output = result.tail.trim()
      ? `; its output (the last lines):\n${result.tail.replace(/^/gm, '  ')}`
      : '';
    throw new TendError(
      'TEND_EXEC_FAILED',
      `the exec provider's initScript exited with code ${result.exitCode}${output}`,
      { detail: { exitCode: result.exitCode, log: result.tail } },
    );
  }
  return { initScript: { log: stdout.join('\n').trim() } };
}
