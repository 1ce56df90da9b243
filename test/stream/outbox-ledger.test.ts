/**
 * The outbox's size ledger of a project without a server: each command adds its own segment to
 * the size it holds instead of a `stat` of every segment; the files are counted without a usable
 * ledger, over the bound, and every `outboxRecountEvery` commands.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { enforceBoundWithoutServer, outboxRecountEvery } from '../../src/outbox/bound.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An outbox with segments of the given sizes (`s0.jsonl`, `s1.jsonl`…) and where its ledger goes. */
function outboxWith(sizes: number[]) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tend-outbox-ledger-'));
  dirs.push(dir);
  const outbox = path.join(dir, 'outbox');
  mkdirSync(outbox);
  const segment = (id: string, bytes: number) =>
    writeFileSync(path.join(outbox, `${id}.jsonl`), 'x'.repeat(bytes));
  sizes.forEach((bytes, i) => segment(`s${i}`, bytes));
  const ledgerFile = path.join(dir, 'cache', 'outbox-bytes.json');
  const ledger = () => JSON.parse(readFileSync(ledgerFile, 'utf8')) as unknown;
  const end = (ownSegment: string, maxBytes = 1_000_000) =>
    enforceBoundWithoutServer(outbox, maxBytes, { ownSegment, ledgerFile });
  return { outbox, segment, ledgerFile, ledger, end };
}

describe('the outbox size ledger', () => {
  it("counts the files once, then adds each command's own segment without counting them again", () => {
    const box = outboxWith([100, 200]);
    expect(box.end('s1')).toBeUndefined();
    expect(box.ledger()).toEqual({ bytes: 300, commands: 0 });
    // A segment no command added (its command was killed) waits for the next count.
    box.segment('s8', 1000);
    box.segment('s9', 50);
    expect(box.end('s9')).toBeUndefined();
    expect(box.ledger()).toEqual({ bytes: 350, commands: 1 });
    // A command that wrote no event adds nothing.
    expect(box.end('none')).toBeUndefined();
    expect(box.ledger()).toEqual({ bytes: 350, commands: 2 });
  });

  it(`counts the files again every ${outboxRecountEvery} commands`, () => {
    const box = outboxWith([100, 200, 300]);
    mkdirSync(path.dirname(box.ledgerFile), { recursive: true });
    writeFileSync(box.ledgerFile, JSON.stringify({ bytes: 0, commands: outboxRecountEvery - 1 }));
    box.end('s0');
    expect(box.ledger()).toEqual({ bytes: 100, commands: outboxRecountEvery });
    box.end('s0');
    expect(box.ledger()).toEqual({ bytes: 600, commands: 0 });
  });

  it('counts the files when the ledger and its own segment are over the bound; after drops, leaves it to the next count', () => {
    const box = outboxWith([400, 600]);
    mkdirSync(path.dirname(box.ledgerFile), { recursive: true });
    // Over by the ledger (segments since sent and removed), within the bound by the files.
    writeFileSync(box.ledgerFile, JSON.stringify({ bytes: 1400, commands: 3 }));
    expect(box.end('s1', 1500)).toBeUndefined();
    expect(box.ledger()).toEqual({ bytes: 1000, commands: 0 });
    // Over by the files: the full check runs (nothing here it may drop), and the ledger goes.
    const report = box.end('s1', 500);
    expect(report).toMatchObject({ maxBytes: 500, dropped: {} });
    expect(report!.stillOverBy).toBeGreaterThan(0);
    expect(existsSync(box.ledgerFile)).toBe(false);
  });

  it('a torn ledger, or one that is not a count: the files are counted and it is written anew', () => {
    const broken = [
      '',
      '{',
      '[]',
      'null',
      '\u0000',
      '{"bytes":-1,"commands":0}',
      '{"bytes":1e400,"commands":0}',
      '{"bytes":"1","commands":0}',
      '{"bytes":1.5,"commands":0}',
      '{"bytes":1}',
    ];
    for (const text of broken) {
      const box = outboxWith([100, 200]);
      mkdirSync(path.dirname(box.ledgerFile), { recursive: true });
      writeFileSync(box.ledgerFile, text);
      expect(box.end('s0'), text).toBeUndefined();
      expect(box.ledger(), text).toEqual({ bytes: 300, commands: 0 });
    }
  });
});
