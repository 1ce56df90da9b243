/**
 * The argument table of the real CLI: an unknown command is a usage error (exit 2), with or
 * without --help and after `tend help`, with the closest command it may have meant.
 */
import { describe, expect, it } from 'vitest';
import { runTend } from './helpers/project.js';

describe('tend <command>', () => {
  it.each([
    [['nope', '--help']],
    [['nope', '-h']],
    [['--root', '/tmp', 'nope', '--help']],
    [['nope']],
    [['server', 'nope', '--help']],
  ])('%j says the command is unknown and exits 2', async (args) => {
    const run = await runTend(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command 'nope'");
    expect(run.stdout).not.toMatch(/Usage:/);
  });

  it.each([
    [['help', 'deply'], 'deply', 'deploy'],
    [['deply', '--help'], 'deply', 'deploy'],
    [['help', 'server', 'tokn'], 'tokn', 'token'],
    [['help', 'cleanup', 'hlat'], 'hlat', 'halt'],
  ])('%j says the command is unknown, suggests the closest, and exits 2', async (args, unknown, meant) => {
    const run = await runTend(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`error: unknown command '${unknown}'\n(Did you mean ${meant}?)`);
    expect(run.stdout).toBe('');
  });

  it.each([[['help']], [['help', 'deploy']], [['help', 'server', 'token']]])(
    '%j prints the help and exits 0',
    async (args) => {
      const run = await runTend(args);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^Usage: tend/);
    },
  );

  it.each([
    [['--help']],
    [['build', '--help']],
    [['--env', 'dev', 'build', 'api', '--help']],
    [['events', 'push', '--help']],
  ])('%j prints the help and exits 0', async (args) => {
    const run = await runTend(args);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Usage: tend/);
  });
});
