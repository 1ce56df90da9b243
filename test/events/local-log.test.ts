/**
 * The local event log as `tend events` reads it: a line that is not an event (valid JSON of
 * another shape, or not JSON) is skipped with a warning naming the file and the line; the rest
 * of the session is shown.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listSessionLogs } from '../../src/events/local-log.js';
import { removeProjects, runTend } from '../helpers/project.js';
import { busyProject, streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

describe('tend events and a damaged session log', () => {
  it('skips {"id":1}, [], null and a torn line, naming the file and each line, and shows the rest', async () => {
    const root = busyProject(1, 'damaged-log');
    const env = streamEnv(undefined, undefined);
    const run = await runTend(['build'], { cwd: root, env });
    expect(run.code, run.stderr).toBe(0);
    const [log] = listSessionLogs(path.join(root, '.tend', 'events'));
    const goodLines = readFileSync(log!.file, 'utf8').split('\n').filter(Boolean).length;
    appendFileSync(
      log!.file,
      '{"id":1}\n[]\nnull\n{"id":"01J","type":"log","timestamp":"x","payload":[]}\n{"id":"tor',
    );
    const relative = path.relative(root, log!.file);
    const lines = [goodLines + 1, goodLines + 2, goodLines + 3, goodLines + 4, goodLines + 5].join(', ');

    const shown = await runTend(['events', 'latest', '--json'], { cwd: root, env });
    expect(shown.code, shown.stderr).toBe(0);
    expect((JSON.parse(shown.stdout) as unknown[]).length).toBe(goodLines);
    expect(shown.stderr).toContain(`skipped 5 unreadable line(s) of ${relative} (not events): line ${lines}`);

    const human = await runTend(['events', 'latest'], { cwd: root, env });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/sessionCompleted/);

    const listed = await runTend(['events', '--json'], { cwd: root, env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ outcome: 'completed', events: goodLines }]);
    expect(listed.stderr).toContain(relative);
  });
});
