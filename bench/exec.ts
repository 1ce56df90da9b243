/**
 * The exec benchmark (issue 15): exec actions against the process-spawn floor, each measured in
 * the same run as its floors.
 *
 * - 500 exec Builds + 500 exec Tests (`echo`), first run of `tend test` (the whole CLI command),
 *   against `seq 1000 | xargs -P8 -n1 echo` and against Node spawning 1,000 `echo` 8 at a time;
 *   target ≤ 3× xargs.
 * - 200 exec `true` Builds (`tend build`), against spawning `true` 200 times, 8 at a time, from
 *   Node; target ≤ 1.15×.
 * - Commands that do real work, against the same commands run by `xargs -P8`: examples/
 *   local-shop's service 20 times over (a Build each, `node build.js`, and a Test each: the built
 *   service started on a port of its own and the example's smoke test run against it), and 200
 *   `sh -c` Builds that hash, sort, tar and gzip a small tree each.
 *
 * Each figure is the median of three runs, a project's floors and ways of starting taken in
 * turns (one run of each a round). tend starts commands in Node spawn helpers; the same
 * CLI with the Python helper (`TEND_EXEC_PYTHON`, an opt-in: it costs a command a tenth of the
 * CPU, which short commands show) and with `TEND_EXEC_HELPERS=0` (every command spawned by tend's
 * own process) is shown beside it. Run it on a quiet machine: under load the ratios swing (on 2
 * cores under a load of 10 to 20, 1,000 actions came out at 0.7× to 3.4× xargs), and with the
 * kernel's autogroup scheduling tend's helpers and commands, each in a session of its own, get
 * more of the CPU than a floor's processes, all in the benchmark's session.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execProjectFiles, figure, median, ratio, tempProject, timeIt } from './support.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tendBin = path.join(repoRoot, 'bin', 'tend.js');
const runs = 3;

/** The Python for the Python helper's rows: TEND_EXEC_PYTHON, else the system's, if it is 3.8 or later. */
const python = process.env.TEND_EXEC_PYTHON || '/usr/bin/python3';
const pythonRuns =
  spawnSync(python, ['-c', 'import sys; sys.exit(sys.version_info < (3, 8))'], { stdio: 'ignore' }).status ===
  0;

/** How tend starts commands in each row: Node helpers (the default), Python helpers, no helper. */
const ways: { name: string; env: Record<string, string> }[] = [
  { name: 'the Node helper (the default)', env: { TEND_EXEC_PYTHON: '' } },
  ...(pythonRuns
    ? [{ name: 'TEND_EXEC_PYTHON (the Python helper)', env: { TEND_EXEC_PYTHON: python } }]
    : []),
  { name: 'TEND_EXEC_HELPERS=0 (no spawn helper)', env: { TEND_EXEC_PYTHON: '', TEND_EXEC_HELPERS: '0' } },
];

/** Something timed: `reset` (untimed) before each run. */
interface Timed {
  name: string;
  run: () => Promise<unknown> | unknown;
  reset?: () => void;
}

/**
 * Each of `subjects` run once a round, `runs` rounds, in an order that turns by one each round (a
 * load that comes and goes during the benchmark reaches each alike): each one's median, by name.
 */
async function medians(subjects: Timed[]): Promise<Map<string, number>> {
  const times = new Map(subjects.map((subject) => [subject.name, [] as number[]]));
  for (let round = 0; round < runs; round++) {
    for (let k = 0; k < subjects.length; k++) {
      const subject = subjects[(k + round) % subjects.length]!;
      subject.reset?.();
      times.get(subject.name)!.push(await timeIt(subject.run));
    }
  }
  return new Map([...times].map(([name, values]) => [name, median(values)]));
}

/** `args` of the CLI in `root`, each of `ways`, from a fresh `.tend` (nothing cached) after `reset`. */
function tendRuns(root: string, args: string[], reset?: () => void): Timed[] {
  return ways.map((way) => ({
    name: way.name,
    reset: () => {
      rmSync(path.join(root, '.tend'), { recursive: true, force: true });
      reset?.();
    },
    run: () => {
      const result = spawnSync(process.execPath, [tendBin, ...args, '--root', root], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, CI: 'true', TEND_SERVER_URL: '', ...way.env },
      });
      if (result.status !== 0)
        throw new Error(`tend ${args.join(' ')} exited with ${result.status}: ${result.stderr}`);
    },
  }));
}

/** `script` run by `sh` in `cwd`; throws unless it succeeds. */
function shell(script: string, cwd?: string): void {
  const result = spawnSync('sh', ['-c', script], { cwd, stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`sh -c '${script}' exited with ${result.status}`);
}

/** Spawns `command` `count` times from this process, `concurrency` at a time, output read and dropped. */
async function spawnAll(command: string, args: string[], count: number, concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.resume();
      child.stderr.resume();
      await new Promise((resolve) => child.once('close', resolve));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * Prints the default way's figure as `what` (with `limit`, a maximum), each other way's beside
 * it, their ratios to `floor` (with `target`, a maximum), and the Python helper's to the Node
 * helper's.
 */
function printWays(
  what: string,
  times: Map<string, number>,
  floor: number,
  floorName: string,
  { target, limit }: { target?: { max: number }; limit?: { max: number } } = {},
): void {
  const [byDefault, ...others] = ways.map((way) => [way.name, times.get(way.name)!] as const);
  figure(what, byDefault![1], 'ms', limit);
  for (const [name, time] of others) figure(`  the same, ${name}`, time, 'ms');
  ratio(`${what} vs ${floorName}`, byDefault![1], floor, floorName, target);
  for (const [name, time] of others)
    ratio(`  ${name.split(' ')[0]} vs ${floorName}`, time, floor, floorName, target);
  if (pythonRuns)
    ratio('  the Python helper vs the Node helper', others[0]![1], byDefault![1], 'Node helper');
}

const shopServices = 20;
const shopPort = 27400;

/**
 * examples/local-shop's service `services` times, in `svc-<i>/`: its Build, and a Test that
 * starts the built service on a port of its own, runs the example's smoke test against it and
 * stops it.
 */
function shopProjectFiles(services: number): Record<string, string> {
  const example = path.join(repoRoot, 'examples', 'local-shop', 'service');
  const read = (file: string) => readFileSync(path.join(example, file), 'utf8');
  const serveAndSmoke = `import { spawn } from 'node:child_process';
const port = process.argv[2];
const server = spawn(process.execPath, ['dist/server.js'], {
  env: { ...process.env, PORT: port },
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((resolve) => server.stdout.on('data', (d) => String(d).includes('listening') && resolve()));
process.env.SHOP_URL = 'http://127.0.0.1:' + port;
await import('./smoke.js');
server.kill('SIGTERM');
`;
  const files: Record<string, string> = {
    'tend.yml':
      'kind: Project\nname: shops\ndefaultEnvironment: dev\n' +
      'environments: [{ name: dev, defaultNamespace: shops-dev }]\nproviders: [{ name: exec }]\n',
  };
  for (let i = 0; i < services; i++) {
    const dir = `svc-${i}`;
    for (const file of ['package.json', 'server.js', 'build.js', 'test/smoke.js'])
      files[`${dir}/${file}`] = read(file);
    files[`${dir}/test/serve-and-smoke.js`] = serveAndSmoke;
    files[`${dir}/shop.tend.yml`] =
      `kind: Build\ntype: exec\nname: s${i}\nexclude: [dist/**]\nspec: { command: [node, build.js] }\n---\n` +
      `kind: Test\ntype: exec\nname: s${i}\nexclude: [dist/**]\ndependencies: [build.s${i}]\n` +
      `spec: { command: [node, test/serve-and-smoke.js, '${shopPort + i}'] }\n`;
  }
  return files;
}

const shellBuilds = 200;
const shellBuild =
  'mkdir -p out && cat src/*.txt | sha256sum > out/sum && sort src/*.txt | uniq -c | sort -rn | head -5 > out/top ' +
  '&& tar cf out/src.tar src && gzip -f out/src.tar && echo "::output sum=$(cut -c1-12 out/sum)"';

/** `builds` Builds in `svc-<i>/`, each running `shellBuild` over five files of 2,000 words. */
function shellProjectFiles(builds: number): Record<string, string> {
  const files: Record<string, string> = {
    'tend.yml':
      'kind: Project\nname: shells\ndefaultEnvironment: dev\n' +
      'environments: [{ name: dev, defaultNamespace: shells-dev }]\nproviders: [{ name: exec }]\n',
  };
  const words = Array.from({ length: 2000 }, (_, k) => `word${(k * 7919) % 613}`).join('\n');
  for (let i = 0; i < builds; i++) {
    for (let f = 0; f < 5; f++) files[`svc-${i}/src/part${f}.txt`] = `${words}\n${i}-${f}\n`;
    files[`svc-${i}/build.tend.yml`] =
      `kind: Build\ntype: exec\nname: b${i}\nexclude: [out/**]\nspec: { command: [sh, -c, '${shellBuild}'] }\n`;
  }
  return files;
}

/** Removes `name` from each `svc-<i>/` of `root`: what a build made. */
const removeOutputs = (root: string, count: number, name: string) => () => {
  for (let i = 0; i < count; i++) rmSync(path.join(root, `svc-${i}`, name), { recursive: true, force: true });
};

export async function run(): Promise<void> {
  console.log('exec: exec actions against spawning processes directly');
  if (!pythonRuns) console.log(`  (no Python 3.8 or later at ${python}: no rows for the Python helper)`);

  const echoes = tempProject(execProjectFiles(500, 500));
  const xargs = 'floor: seq 1000 | xargs -P8 -n1 echo';
  const nodeSpawn = 'floor: Node spawning 1,000 echo, 8 at a time';
  const echoTimes = await medians([
    { name: xargs, run: () => shell('seq 1000 | xargs -P8 -n1 echo') },
    { name: nodeSpawn, run: () => spawnAll('echo', ['x'], 1000, 8) },
    ...tendRuns(echoes.root, ['test']),
  ]);
  figure(xargs, echoTimes.get(xargs)!, 'ms');
  figure(nodeSpawn, echoTimes.get(nodeSpawn)!, 'ms');
  printWays('1,000 exec actions (echo), first run', echoTimes, echoTimes.get(xargs)!, 'xargs', {
    target: { max: 3 },
  });
  ratio(
    '1,000 exec actions vs Node spawning 8 at a time',
    echoTimes.get(ways[0]!.name)!,
    echoTimes.get(nodeSpawn)!,
    'Node spawn',
  );
  echoes.remove();

  const truesProject = tempProject(execProjectFiles(200, 0, 'true'));
  const directSpawn = 'floor: Node spawning `true` 200 times, 8 at a time';
  const trueTimes = await medians([
    { name: directSpawn, run: () => spawnAll('true', [], 200, 8) },
    ...tendRuns(truesProject.root, ['build']),
  ]);
  figure(directSpawn, trueTimes.get(directSpawn)!, 'ms');
  printWays('200 exec `true` actions, first run', trueTimes, trueTimes.get(directSpawn)!, 'direct spawn', {
    target: { max: 1.15 },
    limit: { max: 1500 },
  });
  truesProject.remove();

  const shops = tempProject(shopProjectFiles(shopServices));
  const removeShopBuilds = removeOutputs(shops.root, shopServices, 'dist');
  const buildAndTest = `cd svc-$0 && node build.js && node test/serve-and-smoke.js $((${shopPort} + $0))`;
  const shopXargs = `floor: local-shop's build + smoke test ×${shopServices}, xargs -P8`;
  const shopTimes = await medians([
    {
      name: shopXargs,
      reset: removeShopBuilds,
      run: () =>
        shell(`seq 0 ${shopServices - 1} | xargs -P8 -n1 sh -c '${buildAndTest}' > /dev/null`, shops.root),
    },
    ...tendRuns(shops.root, ['test'], removeShopBuilds),
  ]);
  figure(shopXargs, shopTimes.get(shopXargs)!, 'ms');
  printWays(`local-shop ×${shopServices}`, shopTimes, shopTimes.get(shopXargs)!, 'xargs');
  shops.remove();

  const shells = tempProject(shellProjectFiles(shellBuilds));
  const removeShellOutputs = removeOutputs(shells.root, shellBuilds, 'out');
  const shellXargs = `floor: ${shellBuilds} sh -c builds (hash, sort, tar, gzip), xargs -P8`;
  const shellTimes = await medians([
    {
      name: shellXargs,
      reset: removeShellOutputs,
      run: () =>
        shell(
          `seq 0 ${shellBuilds - 1} | xargs -P8 -n1 sh -c 'cd svc-$0 && ${shellBuild}' > /dev/null`,
          shells.root,
        ),
    },
    ...tendRuns(shells.root, ['build'], removeShellOutputs),
  ]);
  figure(shellXargs, shellTimes.get(shellXargs)!, 'ms');
  printWays(`${shellBuilds} sh -c Builds`, shellTimes, shellTimes.get(shellXargs)!, 'xargs');
  shells.remove();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await run();
