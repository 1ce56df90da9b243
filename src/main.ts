/**
 * The `tend` entry point: the argument table. Command modules are imported lazily so that
 * `tend --version` and light commands never load the Kubernetes client or the server.
 */
import { Argument, Command, CommanderError, Option } from 'commander';
import { ExitCode } from './errors.js';
import { printError, type GlobalOptions } from './cli/output.js';
import { collect, execute } from './cli/execute.js';
import { endQuietlyWhenOutputCloses } from './cli/closed-output.js';
import { durationFlag, timeOrDurationFlag, wholeNumber } from './cli/flag-values.js';
import { addCleanupCommands } from './commands/cleanup-arguments.js';
import { addWorkflowCommands, customCommandLine } from './commands/workflow-arguments.js';
import { addServerCommands } from './server/program.js';
import { closestName } from './suggest.js';
import { cliVersion } from './version.js';

const parseTail = wholeNumber('tail', 0, 1_000_000, 'lines');
const parseConcurrency = wholeNumber('concurrency', 1, 1024);
/** Pages of at most 500 are asked for until this many are listed: any number from 1. */
const parseListLimit = wholeNumber('limit', 1, 1_000_000);

export function buildProgram(): Command {
  const program = new Command('tend')
    .description(
      'Build, deploy, test and run your services into per-developer and per-PR environments; ' +
        'record every environment tend touches and clean up the ones nobody uses.',
    )
    .addHelpText(
      'after',
      `
Examples:
  tend deploy                      deploy every Deploy action (and build what they need)
  tend test api --env preview --var pr=42
  tend status --json               the environment and each action's status, as JSON
  tend events latest --type namespaceStatus
  tend cleanup env                 remove the environment tend created

Exit codes: 0 ok, 1 an action failed, 2 configuration or usage error, 130 stopped by Ctrl-C
(the first stops what was started, a second exits at once).
Docs: README.md, docs/configuration.md, docs/errors.md`,
    )
    .version(cliVersion, '-v, --version', 'print the tend version')
    .option('--root <dir>', 'project root (default: nearest directory with a tend.yml)')
    .option(
      '--env <name>',
      'environment to use (default: the project defaultEnvironment); <namespace>.<name>, as in Garden, works in that namespace',
    )
    .option(
      '--var <key=value>',
      'set a variable the configuration reads (repeatable; overrides --var-file and tend.yml)',
      collect,
    )
    .option(
      '--var-file <path>',
      "a YAML file of variables (name: value), over the environment's varfiles (repeatable: later files win)",
      collect,
    )
    .option('--json', 'print results as JSON on stdout')
    .option('--debug', 'print stack traces and debug logs')
    .option(
      '--kubeconfig <file>',
      "kubeconfig file to read instead of KUBECONFIG / ~/.kube/config (overrides the kubernetes provider's)",
    )
    .option(
      '--context <name>',
      "kubeconfig context to use, overriding the provider's context: (server, agent: repeatable, each one served)",
      collect,
    )
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ outputError: (str, write) => write(str) })
    .exitOverride();

  addActionCommands(program);
  addWorkflowCommands(program, execute);
  addCleanupSteering(program);
  addProjectTools(program);
  addExecutorAndServer(program);
  addServerClient(program);
  return program;
}

/** The flags of the commands that ask the server (default: TEND_SERVER_URL/TEND_TOKEN or tend login). */
function serverFlags(c: Command): Command {
  return c
    .option('--server <url>', 'the tend server (default: TEND_SERVER_URL or tend login)')
    .option('--token <token>', 'API token (default: TEND_TOKEN or tend login)');
}
const cleanupServer = () => import('./commands/cleanup-server.js');

/** build, deploy, test and run, status, logs: the commands that work in an environment. */
function addActionCommands(program: Command): void {
  for (const kind of ['build', 'deploy', 'test', 'run'] as const) {
    const what = { build: 'Build', deploy: 'Deploy', test: 'Test', run: 'Run' }[kind];
    const command = program
      .command(`${kind} [names...]`)
      .description(`${kind} the named ${what} actions (all when none are named) and their dependencies`)
      .option(
        '--force',
        `run the ${what} actions even when they are ready for their version; their dependencies are not forced (a ready build is reused${kind === 'build' ? '' : ' unless --force-build'})`,
      );
    // Garden's deploy, test and run have it; its build has --force alone.
    if (kind !== 'build')
      command.option(
        '--force-build',
        'build every Build the actions need again, even when it is ready for its version',
      );
    command
      .option(
        '--watch',
        'then keep watching the files: rebuild, redeploy and re-test what each change affects, until Ctrl-C (exit 130)',
      )
      .option(
        '--show-output',
        'print the output of every action that ran, passing ones too (a failure always shows its last lines)',
      )
      .addOption(
        new Option('--concurrency <n>', 'how many actions run at once')
          .default(8)
          .argParser(parseConcurrency),
      )
      .action(async (names: string[], _opts, cmd: Command) =>
        execute(cmd, async () => {
          const options = cmd.optsWithGlobals<{ watch?: boolean }>();
          return options.watch
            ? (await import('./commands/watch.js')).watchCommand(kind, names, options)
            : (await import('./commands/execute.js')).executeCommand(kind, names, options);
        }),
      );
  }

  program
    .command('status')
    .description(
      'show the status of the environment and every action, without changing anything; ' +
        'for an action that is not ready, why, and where its log is',
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/status.js')).statusCommand(cmd.optsWithGlobals())),
    );

  program
    .command('logs [names...]')
    .description(
      'print what the named deploys printed (all that keep logs when none are named): ' +
        "an exec deploy's process log, the logs of a kubernetes deploy's pods",
    )
    .option('-f, --follow', 'keep printing new lines until Ctrl-C (exit 130) or every source has ended')
    .addOption(
      new Option('--tail <n>', 'only the last N lines of each source (process, pod container)').argParser(
        (value: string) => parseTail(value),
      ),
    )
    .addHelpText(
      'after',
      `
Each line is printed as "<deploy> <source> | <text>" (stderr lines of a process marked [stderr]);
with --json, the lines (and errors) as JSON; with --follow --json, one JSON object per line as it arrives.

Examples:
  tend logs                        every deploy's log
  tend logs api --tail 50 -f       the last 50 lines of deploy.api, then new ones until Ctrl-C`,
    )
    .action(async (names: string[], _opts, cmd: Command) =>
      execute(cmd, async () =>
        (await import('./commands/logs.js')).logsCommand(names, cmd.optsWithGlobals()),
      ),
    );
}

/** tend cleanup …, keep-alive, resume, restore: removing environments and steering the server's cleanup. */
function addCleanupSteering(program: Command): void {
  const cleanup = program
    .command('cleanup')
    .description("remove what tend deployed; see and steer the server's automatic cleanup");
  addCleanupCommands(cleanup, serverFlags, execute);
  serverFlags(
    program
      .command('keep-alive')
      .description('postpone automatic cleanup of the current environment (at most 30d)'),
  )
    .addOption(
      new Option('--for <duration>', 'how long, e.g. 8h, 3d (at most 30d)')
        .default('1d')
        .argParser(durationFlag('for', { maxDays: 30 })),
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await cleanupServer()).keepAliveCommand(cmd.optsWithGlobals())),
    );

  program
    .command('resume')
    .description(
      'resume the current environment after a pause: restore the replicas, CronJobs and local processes ' +
        'the pause recorded (tend deploy|test|run do this at their start)',
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/resume.js')).resumeCommand(cmd.optsWithGlobals())),
    );

  serverFlags(
    program
      .command('restore <environment-id>')
      .description(
        'bring back an environment that cleanup deleted, from the archive taken before the deletion ' +
          '(admin token; run in the project directory, with your kubeconfig)',
      ),
  )
    .option('--into <namespace>', 'restore into this new namespace (the archived one exists again)')
    .addHelpText(
      'after',
      `
The namespace is re-created and recorded by this command's session, then every archived object is
applied in dependency order; paused workloads come back paused. What cannot be restored is listed
with the reason: volume data (never archived), Secrets kept by name only (no --archive-key-file on
the server), objects the cluster refuses. A namespace that exists again is never restored into.

Examples:
  tend envs --state cleaned                       find the environment's id
  tend envs 01J9Z3K4M5N6P7Q8R9S0T1V2W3           "restorable until …"
  tend restore 01J9Z3K4M5N6P7Q8R9S0T1V2W3
  tend restore 01J9Z3K4M5N6P7Q8R9S0T1V2W3 --into shop-alice-restored`,
    )
    .action(async (id: string, _opts, cmd: Command) =>
      execute(cmd, async () =>
        (await import('./commands/restore.js')).restoreCommand(id, cmd.optsWithGlobals()),
      ),
    );
}

/** validate, init, schema, events: the project and its local record. */
function addProjectTools(program: Command): void {
  program
    .command('validate')
    .description('check the project configuration and print every action')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () =>
        (await import('./commands/validate.js')).validateCommand(cmd.optsWithGlobals()),
      ),
    );

  program
    .command('init')
    .description(
      'write a tend.yml (and action files) for the project in this directory (or --root): from its ' +
        'Dockerfiles, Kubernetes manifests, kustomizations and package.json start scripts',
    )
    .option('--dry-run', 'print what it would write (--json: the files too), write nothing')
    .addHelpText(
      'after',
      `
It says what it found and why it chose each action: a Dockerfile is a container Build, manifests
(apiVersion + kind) a kubernetes Deploy of their files (of the image a Build makes, when a
manifest names it or leaves it out), a kustomization a kubernetes Deploy through kustomize, a
package.json start script an exec Deploy. The project is named after the directory; its
environment dev has the namespace <project>-\${local.username} and a cleanup policy.
It never overwrites: a tend.yml or *.tend.yml there, or a tend.yml above (exit 2, naming them).
A Garden project (garden.yml), which tend is to read as it is, gets nothing written beside it.

Examples:
  tend init && tend validate
  tend init --dry-run --json       what it found and the files it would write, as JSON`,
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/init.js')).initCommand(cmd.optsWithGlobals())),
    );

  program
    .command('completion')
    .description(
      'print a shell completion script: source <(tend completion bash), or zsh; fish: tend completion fish | source',
    )
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .addHelpText(
      'after',
      `
Examples:
  source <(tend completion bash)     in ~/.bashrc
  source <(tend completion zsh)      in ~/.zshrc (through bashcompinit)
  tend completion fish > ~/.config/fish/completions/tend.fish`,
    )
    .action(async (shell: string, _opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/completion.js')).completionCommand(shell, program)),
    );

  program
    .command('schema')
    .description('print the JSON Schema of tend.yml and *.tend.yml documents (for editor completion)')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/schema.js')).schemaCommand()),
    );

  program
    .command('events [session]')
    .description(
      'the local event log: list recent sessions, or print one (a session id, or `latest`: the newest ' +
        'that was not a read-only tend status or tend logs); ' +
        '`events push` sends what waits in the outbox to the server, `events outbox` shows it',
    )
    .option('--type <types>', 'only these event types (comma-separated, repeatable)', collect)
    .option(
      '--action <ref>',
      'only the events of this action, e.g. deploy.web (without a session: the newest session that has them)',
    )
    .option('--follow', 'keep printing events as they are written, until the session ends')
    .option(
      '--include-read-only',
      '`latest` and --action alone: consider the sessions of tend status and tend logs too (passed over by default)',
    )
    .addOption(new Option('--limit <n>', 'how many sessions to list').default(20).argParser(parseListLimit))
    .option('--retry-quarantined', 'push: also send again the batches the server refused')
    .addOption(
      new Option('--timeout <seconds>', 'push: how long to keep trying before failing')
        .default(60)
        .argParser(wholeNumber('timeout', 1, 1_000_000, 'seconds')),
    )
    .action(async (session: string | undefined, _opts, cmd: Command) =>
      execute(cmd, async () => {
        const events = await import('./commands/events.js');
        if (session === 'push') return events.pushCommand(cmd.optsWithGlobals());
        if (session === 'outbox') return events.outboxCommand(cmd.optsWithGlobals());
        const opts = cmd.optsWithGlobals<{ action?: string }>();
        return session === undefined && opts.action === undefined
          ? events.listSessionsCommand(opts)
          : events.showSessionCommand(session, opts);
      }),
    );
}

/** tend agent, and tend server with its subcommands. */
function addExecutorAndServer(program: Command): void {
  program
    .command('agent')
    .description(
      'run the cleanup executor next to a cluster (the global --kubeconfig, default KUBECONFIG or ~/.kube/config, ' +
        'and --context, repeatable, default the current one) or for the local environments of this host (--local)',
    )
    .option('--server <url>', 'the tend server (default: TEND_SERVER_URL, else tend login)')
    .option(
      '--token-file <file>',
      'a file holding an agent-scope token (tend server token create --scope agent); default: TEND_TOKEN, else tend login',
    )
    .option('--token <token>', 'the token itself (visible in ps: prefer --token-file or TEND_TOKEN)')
    .option('--local', 'serve the exec environments of this host (alone: no cluster)')
    .option(
      '--plugin <module>',
      'a third-party plugin module whose environments it cleans (a path, or a package name; repeatable)',
      collect,
    )
    .option(
      '--set <plugin.key=value>',
      "a plugin's executor setting, e.g. --set dirs.root=/srv/envs (repeatable; docs/plugin-api.md#cleanup); " +
        'with --set and no --kubeconfig/--context, no cluster is served',
      collect,
    )
    .option(
      '--interval <duration>',
      "pause between passes until the server's first answer, which sets its own (its --cleanup-interval; the log says which is in force) (default: 30s)",
    )
    .option('--dry-run', 'run every check of the jobs it claims, delete nothing (they are cancelled)')
    .option('--once', 'run one pass and exit (exit code 1 if anything failed)')
    .option(
      '--protect-namespace <glob>',
      'namespace names never deleted, beyond kube-*, default, tend-system (repeatable)',
      collect,
    )
    .option('--system-namespace <name>', "the provider's systemNamespace, never deleted", 'tend-system')
    .addOption(
      new Option('--concurrency <n>', 'jobs verified and executed at once')
        .default(64)
        .argParser(parseConcurrency),
    )
    .addOption(
      new Option(
        '--health-port <port>',
        'answer Kubernetes probes on this port, all interfaces: /healthz (passes keep ending), /readyz (the last pass went through)',
      ).argParser(wholeNumber('health-port', 0, 65535)),
    )
    .addHelpText(
      'after',
      `
Examples:
  tend agent --server https://tend.example.com --token-file /var/run/tend/token --context prod-eu
  TEND_TOKEN=… tend agent --server http://localhost:7420 --local
  tend agent --token-file token --plugin ./dirs-plugin.js --set dirs.root=/srv/envs
  tend agent --once --json          the server and token of tend login

It also runs the restore jobs of the dashboard's Restore button; for those its credentials must
create namespaces and the archived objects (deploy/components/restore, docs/cleanup.md#undo).`,
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/agent.js')).agentCommand(cmd.optsWithGlobals())),
    );

  addServerCommands(program);
}

/** login, environments, protect and unprotect: the CLI as a client of a server. */
function addServerClient(program: Command): void {
  program
    .command('login')
    .description('store the server URL and token for this user (0600), after checking them with the server')
    .requiredOption('--server <url>', 'the tend server, e.g. http://localhost:7420')
    .requiredOption('--token <token>', 'an API token (tend server token create)')
    .option('--no-verify', 'store without asking the server')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./commands/login.js')).loginCommand(cmd.optsWithGlobals())),
    );
  serverFlags(
    program
      .command('environments [id]')
      .alias('envs')
      .description(
        "list the server's record of environments, or show one (its resources, recent sessions and cleanup plan) by id " +
          '(server from --server/--token, TEND_SERVER_URL/TEND_TOKEN or tend login)',
      ),
  )
    .option('--project <project>', 'only this project')
    .addOption(
      new Option('--state <state>', 'only environments in this state').choices([
        'active',
        'paused',
        'cleaned',
      ]),
    )
    .option('--search <text>', 'only environments whose project, name, namespace or owner contains this text')
    .addOption(
      new Option('--stale-since <when>', 'no activity since this time or duration (e.g. 3d)').argParser(
        timeOrDurationFlag('stale-since'),
      ),
    )
    .addOption(new Option('--limit <n>', 'how many to list').default(50).argParser(parseListLimit))
    .option('--all', 'list every environment (all pages)')
    .addHelpText(
      'after',
      `
Examples:
  tend envs --project shop --state active
  tend envs --search alice                         project, environment, namespace or owner containing "alice"
  tend envs 01J9Z3K4M5N6P7Q8R9S0T1V2W3 --json   one environment: resources, sessions, cleanup plan`,
    )
    .action(async (id: string | undefined, _opts, cmd: Command) =>
      execute(cmd, async () => {
        const environments = await import('./commands/environments.js');
        return id === undefined
          ? environments.environmentsCommand(cmd.optsWithGlobals())
          : environments.environmentCommand(id, cmd.optsWithGlobals());
      }),
    );
  addSecretCommands(program);
  for (const protect of [true, false]) {
    serverFlags(
      program
        .command(`${protect ? 'protect' : 'unprotect'} [id]`)
        .description(
          protect
            ? 'protect an environment from automatic cleanup (a developer or admin token): the one with that id (tend envs), else the current one'
            : 'remove the protection of an environment (a developer or admin token): the one with that id, else the current one',
        ),
    )
      .addHelpText(
        'after',
        `
Examples:
  tend ${protect ? 'protect' : 'unprotect'}                the current environment (this project, --env)
  tend ${protect ? 'protect' : 'unprotect'} <id> --json    an environment by its id (tend envs lists them)`,
      )
      .action(async (id: string | undefined, _opts, cmd: Command) =>
        execute(cmd, async () => (await cleanupServer()).protectCommand(protect, id, cmd.optsWithGlobals())),
      );
  }
}

/** tend secrets set|list|delete: the project secrets `${secrets.NAME}` reads, on the server (admin). */
function addSecretCommands(program: Command): void {
  const secrets = program
    .command('secrets')
    .description(
      "the project secrets ${secrets.NAME} reads, kept sealed by the tend server (an admin token); --env for an environment's own value",
    );
  const secretCommand = async () => import('./commands/secrets.js');
  serverFlags(
    secrets
      .command('set <name>')
      .description('set a secret: its value from stdin or --value-file, never an argument'),
  )
    .option('--project <project>', "the project (default: the current directory's)")
    .option('--value-file <file>', 'read the value from this file (one trailing newline dropped)')
    .addHelpText(
      'after',
      `
Examples:
  printf %s "$DB_PASSWORD" | tend secrets set DB_PASSWORD          every environment of this project
  tend secrets set DB_PASSWORD --env ci --value-file ./ci-password  the ci environment's own value`,
    )
    .action(async (name: string, _opts, cmd: Command) =>
      execute(cmd, async () => (await secretCommand()).setSecretCommand(name, cmd.optsWithGlobals())),
    );
  serverFlags(
    secrets
      .command('list')
      .description('list the secrets: names, environments and update times, never values'),
  )
    .option('--project <project>', "the project (default: the current directory's)")
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await secretCommand()).listSecretsCommand(cmd.optsWithGlobals())),
    );
  serverFlags(
    secrets.command('delete <name>').description("delete a secret (--env: the environment's own value)"),
  )
    .option('--project <project>', "the project (default: the current directory's)")
    .action(async (name: string, _opts, cmd: Command) =>
      execute(cmd, async () => (await secretCommand()).deleteSecretCommand(name, cmd.optsWithGlobals())),
    );
}

/**
 * The first operand that names no subcommand where one is expected, with the names it could have
 * meant, or undefined — when help was asked for: `tend nope --help` (commander shows the help for
 * `--help` before it looks at the command) or `tend help nope` (commander's help command shows
 * the program's help for a name it does not know). An unknown command is a usage error either way.
 */
export function unknownCommand(
  program: Command,
  args: readonly string[],
): { name: string; names: string[] } | undefined {
  const helpFlag = args.some((a) => a === '--help' || a === '-h');
  let helpCommand = false;
  let command = program;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return undefined;
    if (arg.startsWith('-')) {
      // Skip an option's value when it takes one and it was not given as --name=value.
      const option = [command, ...ancestors(command)]
        .flatMap((c) => c.options)
        .find((o) => o.long === arg || o.short === arg);
      if (option && (option.required || option.optional) && !arg.includes('=')) i++;
      continue;
    }
    if (command.commands.length === 0) return undefined; // an argument, not a command
    const next = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!next && arg === 'help' && !helpCommand) {
      helpCommand = true; // `tend help server token`: the words after it name the command
      continue;
    }
    if (!next) {
      if (!helpFlag && !helpCommand) return undefined; // commander says it, with a suggestion
      const names = command
        .createHelp()
        .visibleCommands(command)
        .flatMap((c) => [c.name(), ...c.aliases()]);
      return { name: arg, names };
    }
    command = next;
  }
  return undefined;
}

function ancestors(command: Command): Command[] {
  const out: Command[] = [];
  for (let c = command.parent; c; c = c.parent) out.push(c);
  return out;
}

export async function main(argv: string[]): Promise<void> {
  endQuietlyWhenOutputCloses();
  const program = buildProgram();
  try {
    argv = [...(await customCommandLine(program, argv))];
    const unknown = unknownCommand(program, argv.slice(2));
    if (unknown !== undefined) {
      // Worded as commander words its own unknown commands.
      const similar = closestName(unknown.name, unknown.names);
      program.error(
        `error: unknown command '${unknown.name}'${similar ? `\n(Did you mean ${similar}?)` : ''}`,
        { code: 'commander.unknownCommand' },
      );
    }
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; anything else commander rejects is a usage error.
      process.exitCode = error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
      return;
    }
    process.exitCode = printError(error, program.opts<GlobalOptions>());
  }
}

// Not awaited: the bundle is CommonJS (src/cli/launch.ts), and main reports its own errors.
void main(process.argv);
