/**
 * The exec spawn helper in Python: the same protocol as the Node helper (`spawn-helper.ts`), run
 * by `python3 -I -S -c` when TEND_EXEC_PYTHON names the Python (spawner.ts; off by default).
 *
 * Why a second language: Node's `spawn` forks (every page of the helper's ~40 MB is marked
 * copy-on-write, then copied again as the helper touches it) and runs ~0.7 ms of JavaScript per
 * command. `os.posix_spawn` is glibc's, which starts the child with a vfork-like clone (the
 * parent's memory is not copied), from a 10 MB process: about a tenth of the Node helper's CPU
 * per command, which a project of short commands sees (`bench/exec.ts`). It needs Python 3.8; an
 * older one exits before it is ready, and tend starts the commands itself.
 *
 * What a command sees is the same either way: its own session and process group (setsid), stdin
 * on /dev/null, the environment as sent, signal dispositions at their defaults (a Python handler
 * is reset by exec; SIGPIPE and SIGXFSZ, which Python ignores, are reset), its directory, and
 * the file looked up on the PATH of the environment it gets, as Node does. Answers are the Node
 * helper's: errors carry Node's errno code and message (`spawn x ENOENT`), and `closed` gives the
 * exit code or the signal's number, once the command has exited and its stdout and stderr closed.
 *
 * Exits are seen through SIGCHLD (a Python handler and the signal module's wake-up pipe, polled
 * with the requests and the output), so one loop serves requests, output and exits without threads.
 */

import { FrameType } from './spawn-helper.js';

/** The helper's argument: `FrameType` as `spawn=1,ready=2,…`. */
export const pythonHelperArgument = Object.entries(FrameType)
  .map(([name, type]) => `${name}=${type}`)
  .join(',');

/**
 * The helper's program, run with `pythonHelperArgument` for its argument.
 * `-I` ignores PYTHON* variables and the user's site; `-S` skips `site`. It imports only what
 * starts fast: frames are fields (no json, which imports re), `select.poll` (not selectors, which
 * imports collections) and `_signal` (the C module under `signal`, which imports enum) — those
 * three were two thirds of the helper's start. It works in bytes: what tend sends is UTF-8 and
 * goes to the command as it is.
 */
export const pythonHelperSource = String.raw`
import errno, os, select, struct, sys
try:
    import _signal as signal
except ImportError:
    import signal

# os.posix_spawn with setsid came in 3.8: an older Python exits before it is ready, and tend
# starts the commands itself.
if sys.version_info < (3, 8):
    sys.exit(3)

# The frame types, as tend sends them; a header is length (uint32), type (uint8), command id (uint32).
TYPES = {name: int(number) for name, _, number in (item.partition('=') for item in sys.argv[1].split(','))}
SPAWN, READY, STARTED, STDOUT, STDERR, ERROR, CLOSED, ENVIRONMENT = (TYPES[name] for name in (
    'spawn', 'ready', 'started', 'stdout', 'stderr', 'error', 'closed', 'environment'))
HEADER = struct.Struct('>IBI')
REQUESTS, ANSWERS = 0, 1
# Python ignores SIGPIPE and SIGXFSZ; a command gets them back at their defaults, as subprocess does.
RESET_SIGNALS = [signal.SIGPIPE, signal.SIGXFSZ]
poller = select.poll()
# What each polled fd is: None (the wake-up pipe), REQUESTS, or (command, STDOUT or STDERR).
sources = {}
running = {}
queued = []
inherited = {}
found = {}


def watch(fd, source):
    sources[fd] = source
    poller.register(fd, select.POLLIN)


def send(kind, ident, payload=b''):
    queued.append(HEADER.pack(len(payload), kind, ident))
    if payload:
        queued.append(payload)


def send_fields(kind, ident, *fields):
    send(kind, ident, b''.join(field + b'\0' for field in fields))


def fields_of(payload):
    return payload.split(b'\0')[:-1]


def environment_of(fields):
    # NAME=value, the name ending at the first '=' (as execve reads it).
    return {name: value for name, equals, value in (field.partition(b'=') for field in fields)
            if name and equals}


def flush():
    # A blocking write to a pipe: a slow reader holds the helper back, nothing piles up here.
    data = memoryview(b''.join(queued))
    queued.clear()
    try:
        while data:
            data = data[os.write(ANSWERS, data):]
    except OSError:
        tend_gone()


def tend_gone():
    # tend exited, however: nothing it started may outlive it.
    for command in running.values():
        try:
            os.killpg(command.pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def executable(file, cwd, env, cached=True):
    # The file looked up on the PATH of the command's environment (as Node does), from the
    # command's directory (the helper's own now); found once per directory, PATH and name.
    if b'/' in file:
        return file
    search = env.get(b'PATH', os.defpath.encode())
    key = (cwd, search, file)
    if cached and key in found:
        return found[key]
    denied = None
    for directory in search.split(b':'):
        candidate = os.path.join(directory or b'.', file)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            found[key] = candidate
            return candidate
        if denied is None and os.path.exists(candidate):
            denied = candidate
    if denied is not None:
        raise PermissionError(errno.EACCES, 'permission denied', denied)
    raise FileNotFoundError(errno.ENOENT, 'not found', file)


def spawn(file, argv, cwd, env):
    path = executable(file, cwd, env)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_DUP2, out_write, 1), (os.POSIX_SPAWN_DUP2, err_write, 2)]
    try:
        try:
            pid = os.posix_spawn(path, argv, env, file_actions=actions, setsid=True,
                                 setsigdef=RESET_SIGNALS)
        except FileNotFoundError:
            # Found before, gone since: look again.
            path = executable(file, cwd, env, cached=False)
            pid = os.posix_spawn(path, argv, env, file_actions=actions, setsid=True,
                                 setsigdef=RESET_SIGNALS)
    except BaseException:
        os.close(out_read)
        os.close(err_read)
        raise
    finally:
        os.close(out_write)
        os.close(err_write)
    return pid, out_read, err_read


class Command:
    __slots__ = ('ident', 'pid', 'open', 'status')

    def __init__(self, ident, pid):
        self.ident = ident
        self.pid = pid
        self.open = 2
        self.status = None

    def finish_if_done(self):
        if self.open or self.status is None:
            return
        del running[self.ident]
        if os.WIFSIGNALED(self.status):
            send_fields(CLOSED, self.ident, b'', b'%d' % os.WTERMSIG(self.status))
        else:
            send_fields(CLOSED, self.ident, b'%d' % os.WEXITSTATUS(self.status), b'')


def start(ident, fields):
    file, cwd, count = fields[0], fields[1], int(fields[2])
    env = dict(inherited)
    env.update(environment_of(fields[3 + count:]))
    try:
        # The helper starts one command at a time: its own directory is the command's (every
        # time: a directory removed and made again since is another one).
        os.chdir(cwd)
        pid, out, err = spawn(file, [file] + fields[3:3 + count], cwd, env)
    except OSError as error:
        code = errno.errorcode.get(error.errno, 'UNKNOWN').encode()
        send_fields(ERROR, ident, code, b'%d' % -error.errno, b'spawn ' + file, file,
                    b'spawn ' + file + b' ' + code)
        send_fields(CLOSED, ident, b'%d' % -error.errno, b'')
        return
    except (ValueError, TypeError) as error:
        send_fields(ERROR, ident, b'ERR_INVALID_ARG_VALUE', b'', b'', b'',
                    str(error).encode('utf-8', 'replace'))
        send_fields(CLOSED, ident, b'', b'')
        return
    command = Command(ident, pid)
    running[ident] = command
    send(STARTED, ident, b'%d' % pid)
    watch(out, (command, STDOUT))
    watch(err, (command, STDERR))


def reap():
    for command in list(running.values()):
        if command.status is None:
            pid, status = os.waitpid(command.pid, os.WNOHANG)
            if pid:
                command.status = status
                command.finish_if_done()


wake_read, wake_write = os.pipe()
os.set_blocking(wake_read, False)
os.set_blocking(wake_write, False)
signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
signal.signal(signal.SIGCHLD, lambda number, frame: None)
# Its own session (no terminal's Ctrl-C); tend decides what stops. A handler, not SIG_IGN, which
# the commands would inherit.
signal.signal(signal.SIGINT, lambda number, frame: None)
watch(wake_read, None)
watch(REQUESTS, REQUESTS)

# 'ready' before any request is read, in a write of its own.
send(READY, 0)
flush()

pending = b''
while True:
    for fd, _ in poller.poll():
        source = sources[fd]
        if source is None:
            try:
                while os.read(wake_read, 4096):
                    pass
            except BlockingIOError:
                pass
            reap()
        elif source == REQUESTS:
            chunk = os.read(REQUESTS, 1 << 16)
            if not chunk:
                tend_gone()
            pending += chunk
            offset = 0
            while len(pending) - offset >= HEADER.size:
                length, kind, ident = HEADER.unpack_from(pending, offset)
                end = offset + HEADER.size + length
                if len(pending) < end:
                    break
                if kind == SPAWN:
                    start(ident, fields_of(pending[offset + HEADER.size:end]))
                elif kind == ENVIRONMENT:
                    inherited = environment_of(fields_of(pending[offset + HEADER.size:end]))
                offset = end
            pending = pending[offset:]
        else:
            command, kind = source
            chunk = os.read(fd, 1 << 16)
            if chunk:
                send(kind, command.ident, chunk)
            else:
                poller.unregister(fd)
                del sources[fd]
                os.close(fd)
                command.open -= 1
                command.finish_if_done()
    if queued:
        flush()
`;
