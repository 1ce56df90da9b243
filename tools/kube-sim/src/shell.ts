/**
 * Commands run through pods/exec, simulated against the pod's scratch directory (its `/`):
 * tar, cat, echo, ls, mkdir, rm, test, true/false/exit, sleep, sh -c with `&&`, `||`, `;`,
 * `cd` and `>`/`>>`, and the builders (`buildctl build`, `buildctl-daemonless.sh build`).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { appendFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import { runBuild } from './builder.js';
import type { Registry } from './registry.js';

export interface ShellIO {
  stdin: Readable;
  stdout: (data: Buffer | string) => void;
  stderr: (data: Buffer | string) => void;
  /** Host directory standing for the container's `/`. */
  root: string;
  cwd: string;
  registry: Registry;
  registryHosts: string[];
  env: Record<string, string>;
}

/** Map a container path onto the scratch directory; `..` cannot leave it. */
export function hostPath(io: Pick<ShellIO, 'root' | 'cwd'>, p: string): string {
  return join(io.root, posix.resolve('/', io.cwd, p));
}

/** Split a shell line into words, honouring quotes and backslashes. Operators are own words. */
export function tokenize(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let has = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      cur += line.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? line.length : end;
      has = true;
    } else if (ch === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length) i++;
        cur += line[i];
        i++;
      }
      has = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      cur += line[++i];
      has = true;
    } else if (/\s/.test(ch)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else if (
      (ch === '&' && line[i + 1] === '&') ||
      (ch === '|' && line[i + 1] === '|') ||
      (ch === '>' && line[i + 1] === '>')
    ) {
      if (has) out.push(cur);
      out.push(ch + ch);
      cur = '';
      has = false;
      i++;
    } else if (ch === ';' || ch === '|' || ch === '>' || ch === '\n') {
      if (has) out.push(cur);
      out.push(ch === '\n' ? ';' : ch);
      cur = '';
      has = false;
    } else {
      cur += ch;
      has = true;
    }
  }
  if (has) out.push(cur);
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Run a shell script: commands joined by `&&`, `||` and `;`. */
export async function runScript(script: string, io: ShellIO): Promise<number> {
  const words = tokenize(script);
  let code = 0;
  let cmd: string[] = [];
  let op = ';';
  const flush = async (): Promise<void> => {
    if (cmd.length) {
      const skip = (op === '&&' && code !== 0) || (op === '||' && code === 0);
      if (!skip) code = await runWithRedirects(cmd, io);
    }
    cmd = [];
  };
  for (const w of words) {
    if (w === '&&' || w === '||' || w === ';') {
      await flush();
      op = w;
      if (code >= EXIT) return code - EXIT;
      continue;
    }
    if (w === '|') {
      io.stderr('kube-sim: pipes are not simulated\n');
      return 2;
    }
    cmd.push(w);
  }
  await flush();
  return code >= EXIT ? code - EXIT : code;
}

/** `exit N` returns EXIT + N so that scripts stop; callers map it back to N. */
const EXIT = 10_000;

async function runWithRedirects(argv: string[], io: ShellIO): Promise<number> {
  const idx = argv.findIndex((w) => w === '>' || w === '>>');
  if (idx < 0 || idx + 1 >= argv.length) return run(argv, io);
  const target = hostPath(io, argv[idx + 1]!);
  const chunks: Buffer[] = [];
  const rest = [...argv.slice(0, idx), ...argv.slice(idx + 2)];
  const code = await run(rest, { ...io, stdout: (d) => chunks.push(Buffer.from(d)) });
  if (argv[idx] === '>>') await appendFile(target, Buffer.concat(chunks));
  else await writeFile(target, Buffer.concat(chunks));
  return code;
}

/** Parse tar's options: bundled (`xzf`, `-xvf`), long (`--file=-`) and separate values. */
function parseTar(args: string[]): {
  mode?: string;
  file?: string;
  dir?: string;
  paths: string[];
  gzip: boolean;
} {
  const o: { mode?: string; file?: string; dir?: string; paths: string[]; gzip: boolean } = {
    paths: [],
    gzip: false,
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const bundled = i === 0 && /^[a-zA-Z]+$/.test(a) ? a : /^-[a-zA-Z]+$/.test(a) ? a.slice(1) : undefined;
    if (bundled !== undefined) {
      for (const ch of bundled) {
        if ('xct'.includes(ch)) o.mode = ch;
        else if (ch === 'z') o.gzip = true;
        else if (ch === 'f') o.file = args[++i];
        else if (ch === 'C') o.dir = args[++i];
      }
    } else if (a === '--extract' || a === '--get') o.mode = 'x';
    else if (a === '--create') o.mode = 'c';
    else if (a === '--list') o.mode = 't';
    else if (a.startsWith('--file=')) o.file = a.slice(7);
    else if (a === '--file') o.file = args[++i];
    else if (a.startsWith('--directory=')) o.dir = a.slice(12);
    else if (a === '--directory') o.dir = args[++i];
    else if (a === '--gzip' || a === '-z') o.gzip = true;
    else if (a.startsWith('-')) continue;
    else o.paths.push(a);
  }
  return o;
}

async function runTar(args: string[], io: ShellIO): Promise<number> {
  const o = parseTar(args);
  const dir = hostPath(io, o.dir ?? '.');
  try {
    if (o.mode === 'x') {
      await mkdir(dir, { recursive: true });
      const input = o.file && o.file !== '-' ? createReadStream(hostPath(io, o.file)) : io.stdin;
      await pipeline(input, tar.x({ cwd: dir }));
      return 0;
    }
    if (o.mode === 't') {
      const input = o.file && o.file !== '-' ? createReadStream(hostPath(io, o.file)) : io.stdin;
      await pipeline(input, tar.t({ onReadEntry: (e) => io.stdout(`${e.path}\n`) }));
      return 0;
    }
    if (o.mode === 'c') {
      const stream = tar.c({ cwd: dir, gzip: o.gzip, portable: true }, o.paths.length ? o.paths : ['.']);
      const sink =
        o.file && o.file !== '-'
          ? createWriteStream(hostPath(io, o.file))
          : new Writable({
              write(chunk: Buffer, _enc, cb) {
                io.stdout(chunk);
                cb();
              },
            });
      await pipeline(stream as unknown as Readable, sink);
      return 0;
    }
    io.stderr("tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\n");
    return 2;
  } catch (e) {
    io.stderr(`tar: ${(e as Error).message}\n`);
    return 2;
  }
}

/** The flags of `buildctl build` that take a value, and those that do not (buildctl 0.x). */
const buildctlValueFlags = new Set([
  '--output',
  '-o',
  '--local',
  '--opt',
  '--frontend',
  '--progress',
  '--trace',
  '--oci-layout',
  '--export-cache',
  '--import-cache',
  '--secret',
  '--allow',
  '--ssh',
  '--metadata-file',
  '--source-policy-file',
  '--ref-file',
]);
const buildctlSwitches = new Set(['--no-cache', '--debug-json-cache-metrics']);

async function runBuildctl(args: string[], io: ShellIO): Promise<number> {
  const sub = args.findIndex((a) => a === 'build');
  if (sub < 0) {
    io.stderr(`kube-sim: only "buildctl build" is simulated\n`);
    return 1;
  }
  const locals: Record<string, string> = {};
  const opts: Record<string, string> = {};
  const outputs: string[] = [];
  let metadataFile: string | undefined;
  const rest = args.slice(sub + 1);
  for (let i = 0; i < rest.length; i++) {
    let a = rest[i]!;
    let v: string | undefined;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) {
      v = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    const value = (): string => v ?? rest[++i] ?? '';
    if (!buildctlValueFlags.has(a) && !buildctlSwitches.has(a)) {
      // As buildctl (urfave/cli) answers a flag it does not define, before building anything.
      io.stderr(`Incorrect Usage: flag provided but not defined: ${a.replace(/^--/, '-')}\n`);
      return 1;
    }
    if (a === '--local') {
      const [k, ...p] = value().split('=');
      locals[k!] = p.join('=');
    } else if (a === '--opt') {
      const [k, ...p] = value().split('=');
      opts[k!] = p.join('=');
    } else if (a === '--output' || a === '-o') outputs.push(value());
    else if (a === '--metadata-file') metadataFile = value();
    else if (buildctlValueFlags.has(a)) value();
  }
  const contextDir = hostPath(io, locals['context'] ?? '.');
  const dockerDir = hostPath(io, locals['dockerfile'] ?? locals['context'] ?? '.');
  const dockerfile = join(dockerDir, opts['filename'] ?? 'Dockerfile');
  const destinations: string[] = [];
  for (const out of outputs) {
    const fields: Record<string, string> = {};
    let last = '';
    for (const part of out.split(',')) {
      const p = part.replace(/^"|"$/g, '');
      const eq = p.indexOf('=');
      if (eq > 0) {
        last = p.slice(0, eq);
        fields[last] = p.slice(eq + 1);
      } else if (last) fields[last] += `,${p}`;
    }
    const push = fields['type'] === 'registry' || fields['push'] === 'true';
    const names = (fields['name'] ?? fields['ref'] ?? '').split(',').filter(Boolean);
    if (push) destinations.push(...names);
  }
  const result = await runBuild(
    {
      contextDir,
      dockerfile,
      destinations,
      registryHosts: io.registryHosts,
      style: 'buildkit',
      out: (l) => io.stdout(`${l}\n`),
      err: (l) => io.stderr(`${l}\n`),
    },
    io.registry,
  );
  if (result.exitCode === 0 && metadataFile) {
    await writeFile(
      hostPath(io, metadataFile),
      JSON.stringify({ 'containerimage.digest': result.digest, 'image.name': destinations.join(',') }),
    );
  }
  return result.exitCode;
}

async function run(argv: string[], io: ShellIO): Promise<number> {
  const [cmd0, ...args] = argv;
  if (!cmd0) return 0;
  const cmd = cmd0.replace(/^.*\//, '');
  switch (cmd) {
    case 'sh':
    case 'bash':
    case 'ash': {
      if (args[0] === '-c') return runScript(args[1] ?? '', io);
      if (args[0] === '-e' && args[1] === '-c') return runScript(args[2] ?? '', io);
      // Interactive shell fed from stdin.
      const chunks: Buffer[] = [];
      for await (const c of io.stdin) chunks.push(Buffer.from(c as Buffer));
      return runScript(Buffer.concat(chunks).toString('utf8'), io);
    }
    case 'true':
      return 0;
    case 'false':
      return 1;
    case 'exit':
      return EXIT + (Number(args[0] ?? 0) || 0);
    case 'echo': {
      const n = args[0] === '-n';
      io.stdout(`${(n ? args.slice(1) : args).join(' ')}${n ? '' : '\n'}`);
      return 0;
    }
    case 'pwd':
      io.stdout(`${io.cwd}\n`);
      return 0;
    case 'cd':
      io.cwd = posix.resolve('/', io.cwd, args[0] ?? '/');
      return 0;
    case 'env':
      for (const [k, v] of Object.entries(io.env)) io.stdout(`${k}=${v}\n`);
      return 0;
    case 'sleep':
      await sleep(Number(args[0] ?? 0) * 1000);
      return 0;
    case 'cat': {
      if (args.length === 0 || (args.length === 1 && args[0] === '-')) {
        for await (const c of io.stdin) io.stdout(c as Buffer);
        return 0;
      }
      let code = 0;
      for (const f of args) {
        try {
          io.stdout(await readFile(hostPath(io, f)));
        } catch {
          io.stderr(`cat: ${f}: No such file or directory\n`);
          code = 1;
        }
      }
      return code;
    }
    case 'ls': {
      const paths = args.filter((a) => !a.startsWith('-'));
      let code = 0;
      for (const p of paths.length ? paths : ['.']) {
        try {
          const st = await stat(hostPath(io, p));
          if (st.isDirectory()) for (const e of (await readdir(hostPath(io, p))).sort()) io.stdout(`${e}\n`);
          else io.stdout(`${p}\n`);
        } catch {
          io.stderr(`ls: ${p}: No such file or directory\n`);
          code = 1;
        }
      }
      return code;
    }
    case 'mkdir':
      for (const p of args.filter((a) => !a.startsWith('-')))
        await mkdir(hostPath(io, p), { recursive: true });
      return 0;
    case 'rm':
      for (const p of args.filter((a) => !a.startsWith('-')))
        await rm(hostPath(io, p), { recursive: true, force: true });
      return 0;
    case 'test':
    case '[': {
      const a = args.filter((x) => x !== ']');
      if (a.length !== 2) return 2;
      try {
        const st = await stat(hostPath(io, a[1]!));
        if (a[0] === '-f') return st.isFile() ? 0 : 1;
        if (a[0] === '-d') return st.isDirectory() ? 0 : 1;
        return 0;
      } catch {
        return 1;
      }
    }
    case 'tar':
      return runTar(args, io);
    case 'buildctl':
    case 'buildctl-daemonless.sh':
      return runBuildctl(args, io);
    default:
      io.stderr(
        `OCI runtime exec failed: exec failed: unable to start container process: exec: "${cmd0}": executable file not found in $PATH: unknown\n`,
      );
      return 127;
  }
}

/** Run an exec command (argv as given to pods/exec). */
export async function runCommand(argv: string[], io: ShellIO): Promise<number> {
  const code = await runWithRedirects(argv, io);
  return code >= EXIT ? code - EXIT : code;
}
