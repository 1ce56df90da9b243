/**
 * /metrics as Prometheus reads it, on a populated server (test/server/populated.ts):
 * `promtool check metrics` (from Debian's prometheus package, put in the dev cache by
 * scripts/test-setup.sh)
 * parses it and finds nothing against Prometheus' conventions but the deprecated hour-based
 * savings gauges; every state an environment can have is reported, paused too; the savings are
 * in seconds and byte-seconds, with the deprecated hours beside them.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentStateSchema } from '../../src/api/views.js';
import { dialects } from './helpers.js';
import { populatedServer, type PopulatedServer } from './populated.js';

/** promtool where scripts/test-setup.sh puts it, else the one on PATH. */
const promtool = (() => {
  const cache =
    process.env.TEND_DEV_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'tend-dev');
  const cached = join(cache, 'promtool', 'promtool');
  return existsSync(cached) ? cached : 'promtool';
})();

/** promtool's answer: its exit code and what it printed (the problems, one per line). */
function promtoolCheck(text: string): Promise<{ code: number; problems: string[] }> {
  return new Promise((resolve, reject) => {
    const child = execFile(promtool, ['check', 'metrics'], (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') {
        return reject(
          new Error(`promtool did not run (bash scripts/test-setup.sh puts it in place): ${error.message}`),
        );
      }
      const code = typeof error?.code === 'number' ? error.code : 0;
      resolve({ code, problems: (stdout + stderr).split('\n').filter((line) => line.trim() !== '') });
    });
    child.stdin!.end(text);
  });
}

const deprecated = [
  'tend_cleanup_freed_environment_hours',
  'tend_cleanup_freed_cpu_hours',
  'tend_cleanup_freed_gib_hours',
];

/** The samples of one metric: labels as written → value. */
function samples(text: string, name: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (match) found.set(match[1] ?? '', Number(match[2]));
  }
  return found;
}

describe.each(dialects)('/metrics on %s', (dialect) => {
  let f: PopulatedServer;
  let text: string;
  beforeAll(async () => {
    f = await populatedServer(dialect);
    const res = await f.server.app.inject({ url: '/metrics', headers: f.server.auth(f.server.tokens.read) });
    expect(res.statusCode, res.body).toBe(200);
    text = res.body;
  }, 60_000);
  afterAll(async () => f?.close());

  it('passes promtool check metrics but for the deprecated hour-based names', async () => {
    const { problems } = await promtoolCheck(text);
    const others = problems.filter((line) => !deprecated.some((name) => line.startsWith(`${name} `)));
    expect(others).toEqual([]);
    // The deprecated names are the only complaints: their unit.
    expect(problems.sort()).toEqual(
      deprecated.map((name) => `${name} use base unit "seconds" instead of "hours"`).sort(),
    );
    // Without them, nothing at all.
    const current = text
      .split('\n')
      .filter((line) => !deprecated.some((name) => line.includes(` ${name} `) || line.startsWith(name)))
      .join('\n');
    expect(await promtoolCheck(current)).toEqual({ code: 0, problems: [] });
  });

  it('reports every state an environment can have, paused too', () => {
    const states = EnvironmentStateSchema.anyOf.map((literal) => literal.const);
    expect(states).toContain('paused');
    expect(Object.fromEntries(samples(text, 'tend_environments'))).toEqual({
      '{state="active"}': 2,
      '{state="paused"}': 1,
      '{state="cleaned"}': 1,
    });
  });

  it('reports the savings in seconds and byte-seconds, and the hours as deprecated', () => {
    const env = samples(text, 'tend_cleanup_freed_environment_seconds');
    const cpu = samples(text, 'tend_cleanup_freed_cpu_seconds');
    const memory = samples(text, 'tend_cleanup_freed_memory_byte_seconds');
    const deleted = '{project="shop",action="delete"}';
    const paused = '{project="shop",action="pause"}';
    // Both spells still run: 3 hours since their jobs, at 1.5 CPUs and 2 GiB requested.
    expect(env.get(deleted)).toBeCloseTo(3 * 3600, 3);
    expect(env.get(paused)).toBeCloseTo(3 * 3600, 3);
    expect(cpu.get(deleted)).toBeCloseTo(1.5 * 3 * 3600, 3);
    expect(memory.get(deleted)).toBeCloseTo(2 * 2 ** 30 * 3 * 3600, 0);
    expect(samples(text, 'tend_cleanup_freed_cpu_hours').get(deleted)).toBeCloseTo(4.5, 6);
    expect(samples(text, 'tend_cleanup_freed_gib_hours').get(deleted)).toBeCloseTo(6, 6);
    expect(samples(text, 'tend_cleanup_saved_cost').get(deleted)).toBeCloseTo(4.5 * 0.04 + 6 * 0.005, 6);
    for (const name of deprecated) {
      expect(text).toMatch(new RegExp(`^# HELP ${name} Deprecated, use tend_cleanup_freed_\\w+: `, 'm'));
    }
  });
});
