/**
 * Action results (src/plugin/results.ts): one append-only journal per process and scope, read
 * back by later processes; a killed process keeps what it recorded; a damaged journal loses
 * only its damaged lines; many journals are merged, never one that a live process writes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { newId } from '../../src/events/bus.js';
import {
  deleteResult,
  forgetResults,
  readResult,
  removeResults,
  writeResult,
  type StoredResult,
} from '../../src/plugin/results.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(() => forgetResults());
afterAll(() => removeProjects());

const results = fileURLToPath(new URL('../../src/plugin/results.ts', import.meta.url));
const result = (version: string): StoredResult => ({
  version,
  outputs: { image: `img:${version}` },
  completedAt: '2026-01-01T00:00:00.000Z',
  exitCode: 0,
});
const scopeDir = (tendDir: string, scope: string) => path.join(tendDir, 'cache', 'results', scope);
const journals = (tendDir: string, scope: string) =>
  readdirSync(scopeDir(tendDir, scope)).filter((name) => name.endsWith('.jsonl'));

describe('action results', () => {
  it('writes one journal for many results, read back after the process forgot them', () => {
    const tendDir = path.join(makeProject({}), '.tend');
    for (let i = 0; i < 200; i++) writeResult(tendDir, '_builds', `build.a${i}`, result(`v${i}`));
    writeResult(tendDir, '_builds', 'build.a7', result('v7-again'));
    expect(journals(tendDir, '_builds')).toHaveLength(1);
    forgetResults();
    expect(readResult(tendDir, '_builds', 'build.a3')).toEqual(result('v3'));
    expect(readResult(tendDir, '_builds', 'build.a7')).toEqual(result('v7-again'));
    expect(readResult(tendDir, '_builds', 'build.nope')).toBeUndefined();
    expect(readResult(tendDir, 'dev-ns', 'build.a3')).toBeUndefined();
  });

  it('keeps what a process recorded before it was killed with SIGKILL', async () => {
    const tendDir = path.join(makeProject({}), '.tend');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { writeResult } from ${JSON.stringify(results)};
         for (let i = 0; i < 50; i++) writeResult(${JSON.stringify(tendDir)}, 'ns', 'test.t' + i, ${JSON.stringify(result('v'))});
         process.kill(process.pid, 'SIGKILL');`,
      ],
      { stdio: 'inherit' },
    );
    const signal = await new Promise((resolve) => child.once('exit', (_code, sig) => resolve(sig)));
    expect(signal).toBe('SIGKILL');
    for (let i = 0; i < 50; i++) expect(readResult(tendDir, 'ns', `test.t${i}`)).toEqual(result('v'));
  });

  it('skips a torn or damaged line of a journal and keeps the rest', () => {
    const tendDir = path.join(makeProject({}), '.tend');
    writeResult(tendDir, 'ns', 'test.a', result('va'));
    writeResult(tendDir, 'ns', 'test.b', result('vb'));
    forgetResults();
    const [journal] = journals(tendDir, 'ns');
    const file = path.join(scopeDir(tendDir, 'ns'), journal!);
    appendFileSync(
      file,
      [
        'not json',
        JSON.stringify({ at: newId(), ref: 'test.c', result: { version: 3 } }), // the wrong shape
        JSON.stringify({ at: newId(), ref: 'test.d' }), // neither a result nor a deletion
        '\u0000\u0000\u0000',
        JSON.stringify({ at: newId(), ref: 'test.e', result: result('ve') }),
        '{"at":"01', // torn by a crash mid-write
      ].join('\n'),
    );
    // Another process's journal that is nothing but damage.
    writeFileSync(path.join(scopeDir(tendDir, 'ns'), `${newId()}-1.jsonl`), '\u00ff\u00fe{{{\n[1,2]\nnull\n');
    expect(readResult(tendDir, 'ns', 'test.a')).toEqual(result('va'));
    expect(readResult(tendDir, 'ns', 'test.b')).toEqual(result('vb'));
    expect(readResult(tendDir, 'ns', 'test.c')).toBeUndefined();
    expect(readResult(tendDir, 'ns', 'test.d')).toBeUndefined();
    expect(readResult(tendDir, 'ns', 'test.e')).toEqual(result('ve'));
    // Writing after the damage still works, and is read back.
    writeResult(tendDir, 'ns', 'test.f', result('vf'));
    forgetResults();
    expect(readResult(tendDir, 'ns', 'test.f')).toEqual(result('vf'));
    expect(readResult(tendDir, 'ns', 'test.a')).toEqual(result('va'));
  });

  it('deletes one result (also one written before the journals) or a whole scope', () => {
    const tendDir = path.join(makeProject({}), '.tend');
    mkdirSync(scopeDir(tendDir, 'ns'), { recursive: true });
    writeFileSync(path.join(scopeDir(tendDir, 'ns'), 'deploy.old.json'), JSON.stringify(result('v-old')));
    expect(readResult(tendDir, 'ns', 'deploy.old')).toEqual(result('v-old'));
    writeResult(tendDir, 'ns', 'deploy.api', result('v1'));
    deleteResult(tendDir, 'ns', 'deploy.api');
    deleteResult(tendDir, 'ns', 'deploy.old');
    writeResult(tendDir, 'ns', 'deploy.web', result('v2'));
    forgetResults();
    expect(readResult(tendDir, 'ns', 'deploy.api')).toBeUndefined();
    expect(readResult(tendDir, 'ns', 'deploy.old')).toBeUndefined();
    expect(readResult(tendDir, 'ns', 'deploy.web')).toEqual(result('v2'));
    removeResults(tendDir, 'ns');
    expect(existsSync(scopeDir(tendDir, 'ns'))).toBe(false);
    expect(readResult(tendDir, 'ns', 'deploy.web')).toBeUndefined();
  });

  it('merges many journals into one, keeping the journal of a process still running', () => {
    const tendDir = path.join(makeProject({}), '.tend');
    const dir = scopeDir(tendDir, 'ns');
    mkdirSync(dir, { recursive: true });
    // The pid of a process that has exited: its journal is done.
    const gone = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    const line = (ref: string, version: string) =>
      `${JSON.stringify({ at: newId(), ref, result: result(version) })}\n`;
    for (let i = 0; i < 20; i++)
      writeFileSync(path.join(dir, `${newId()}-${gone}.jsonl`), line(`test.t${i}`, 'v1'));
    // A later record of t3 by a process that is still running (this one), in its own journal.
    const live = `${newId()}-${process.pid}.jsonl`;
    writeFileSync(path.join(dir, live), line('test.t3', 'v2'));

    expect(readResult(tendDir, 'ns', 'test.t3')).toEqual(result('v2'));
    const after = journals(tendDir, 'ns');
    expect(after.filter((name) => name.endsWith('.merged.jsonl'))).toHaveLength(1);
    expect(after.filter((name) => !name.endsWith('.merged.jsonl'))).toEqual([live]);
    forgetResults();
    for (let i = 0; i < 20; i++) {
      expect(readResult(tendDir, 'ns', `test.t${i}`)).toEqual(result(i === 3 ? 'v2' : 'v1'));
    }
  });
});
