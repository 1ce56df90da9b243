/**
 * `tend logs` for exec deploys through the real CLI: the persistent process's log file, its last
 * N lines, following it (new lines as the process writes them; Ctrl-C exits 130; the follow ends
 * by itself when the process stops), and clear errors for what has no log.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, makeProject, removeProjects, runTend, startTend } from '../helpers/project.js';
import { streamEnv } from '../stream/helpers.js';

afterEach(removeProjects);

const env = streamEnv(undefined, undefined);

const project = (port: number) =>
  makeProject({
    'tend.yml': `kind: Project
name: logs
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: logs-dev
providers:
  - name: exec
`,
    'web/web.tend.yml': `kind: Deploy
type: exec
name: web
spec:
  persistent: true
  command: [node, server.js]
  env: { PORT: "${port}" }
  readiness: { url: "http://127.0.0.1:${port}/" }
---
kind: Deploy
type: exec
name: once
spec:
  command: [sh, -c, "echo configured"]
`,
    'web/server.js': `const http = require('node:http');
console.log('web starting');
console.error('web warns on stderr');
let n = 0;
setInterval(() => console.log('tick ' + n++), 50);
http.createServer((_, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1');
`,
  });

const ticks = (text: string) => [...text.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));

describe('tend logs (exec)', () => {
  it('prints the process log, the last N lines, and follows it until Ctrl-C (exit 130)', async () => {
    const root = project(await freePort());
    const before = await runTend(['logs', 'web'], { cwd: root, env });
    expect(before.code).toBe(1);
    expect(before.stderr).toContain('deploy.web is not deployed in environment dev');

    const deployed = await runTend(['deploy', 'web'], { cwd: root, env });
    expect(deployed.code, deployed.stderr).toBe(0);

    const all = await runTend(['logs', 'web'], { cwd: root, env });
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^deploy\.web process \d+ \| web starting$/);
    expect(lines[1]).toMatch(/^deploy\.web process \d+ \| web warns on stderr$/);

    const last = await runTend(['logs', 'web', '--tail', '2', '--json'], { cwd: root, env });
    expect(last.code, last.stderr).toBe(0);
    const data = JSON.parse(last.stdout) as { lines: { ref: string; source: string; text: string }[] };
    expect(data.lines).toHaveLength(2);
    expect(data.lines.every((l) => l.ref === 'deploy.web' && /^tick \d+$/.test(l.text))).toBe(true);

    const following = startTend(['logs', 'web', '-f', '--tail', '1'], { cwd: root, env });
    const first = ticks(await following.waitForOutput(/tick \d+/, 'the last line'))[0]!;
    // Lines the process wrote after the follow began.
    await following.waitForOutput(new RegExp(`tick ${first + 5}\\b`), 'new tick lines');
    following.signal('SIGINT');
    const ended = await following.exited;
    expect(ended.code, ended.stderr).toBe(130);
    const followed = ticks(ended.stdout);
    expect(followed.slice(0, 6)).toEqual([0, 1, 2, 3, 4, 5].map((i) => first + i)); // the last one, then each new one
    expect((await runTend(['cleanup', 'env'], { cwd: root, env })).code).toBe(0);
  });

  it('a follow ends by itself (exit 0) when the process stops', async () => {
    const root = project(await freePort());
    expect((await runTend(['deploy', 'web'], { cwd: root, env })).code).toBe(0);
    const following = startTend(['logs', '--follow'], { cwd: root, env });
    await following.waitForOutput(/deploy\.web process \d+ \| tick \d+/, 'a tick line');
    const removed = await runTend(['cleanup', 'deploy', 'web'], { cwd: root, env });
    expect(removed.code, removed.stderr).toBe(0);
    const ended = await following.exited;
    expect(ended.code, ended.stderr).toBe(0);
    // With no names: the one-shot deploy keeps no log, and is left out with a note.
    expect(ended.stderr).toContain('no logs: the type of deploy.once keeps none');
  });

  it('a deploy without a log file, a bad --tail, an unknown name: clear errors', async () => {
    const root = project(await freePort());
    const once = await runTend(['logs', 'once'], { cwd: root, env });
    expect(once.code).toBe(2);
    expect(once.stderr).toContain('deploy.once is not persistent: it runs once and keeps no log file');
    expect(once.stderr).toContain('tend events --action deploy.once');

    const tail = await runTend(['logs', 'web', '--tail', '-3'], { cwd: root, env });
    expect(tail.code).toBe(2);
    expect(tail.stderr).toContain('--tail expects a whole number of lines from 0');

    const unknown = await runTend(['logs', 'nope'], { cwd: root, env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no Deploy action named "nope"; defined: web, once');
  });
});
