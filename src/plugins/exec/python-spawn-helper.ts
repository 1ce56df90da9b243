/**
 * The exec spawn helper in Python: the same protocol as the Node helper (`spawn-helper.ts`), run
 * by `python3 -I -S -c` (spawner.ts picks the Python).
 *
 * Why a second language: Node's `spawn` forks (every page of the helper's ~40 MB is marked
 * copy-on-write, then copied again as the helper touches it) and runs ~0.7 ms of JavaScript per
 * command. `os.posix_spawn` is glibc's, which starts the child with a vfork-like clone (the
 * parent's memory is not copied), from a 10 MB process: a quarter of the Node helper's CPU per
 * command (measured in `bench/exec.ts`). It needs Python 3.8; an older one, or none, and tend
 * uses the Node helper.
 *
 * What a command sees is the same either way: its own session and process group (setsid), stdin
 * on /dev/null, the environment as sent, signal dispositions at their defaults (a Python handler
 * is reset by exec; SIGPIPE and SIGXFSZ, which Python ignores, are reset), its directory, and
 * the file looked up on the PATH of the environment it gets, as Node does. Answers are the Node
 * helper's: errors carry Node's errno code and message (`spawn x ENOENT`), and `closed` gives the
 * exit code or the signal's name, once the command has exited and its stdout and stderr closed.
 *
 * Exits are seen through SIGCHLD (a Python handler and the signal module's wake-up pipe in the
 * selector), so one loop serves requests, output and exits without threads.
 */

/**
 * The helper's program, run with spawn-helper.ts's `FrameType` as JSON for its argument. `-I`
 * ignores PYTHON* variables and the user's site; `-S` skips `site`.
 */
export const pythonHelperSource = String.raw`
import errno, json, os, selectors, signal, struct, sys

# os.posix_spawn with setsid came in 3.8: an older Python exits before it is ready, and tend
# uses the Node helper.
if sys.version_info < (3, 8):
    sys.exit(3)

# The frame types, as tend sends them; a header is length (uint32), type (uint8), command id (uint32).
TYPES = json.loads(sys.argv[1])
SPAWN, READY, STARTED, STDOUT, STDERR, ERROR, CLOSED, ENVIRONMENT = (TYPES[name] for name in (
    'spawn', 'ready', 'started', 'stdout', 'stderr', 'error', 'closed', 'environment'))
HEADER = struct.Struct('>IBI')
REQUESTS, ANSWERS = 0, 1
# Python ignores SIGPIPE and SIGXFSZ; a command gets them back at their defaults, as subprocess does.
RESET_SIGNALS = [signal.SIGPIPE, signal.SIGXFSZ]
selector = selectors.DefaultSelector()
running = {}
queued = []
inherited = {}
found = {}


def send(kind, ident, payload=b''):
    queued.append(HEADER.pack(len(payload), kind, ident))
    if payload:
        queued.append(payload)


def send_json(kind, ident, value):
    send(kind, ident, json.dumps(value, separators=(',', ':')).encode())


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


def well_formed(value):
    # Lone surrogates (JSON allows them) become U+FFFD, as Node encodes them.
    if isinstance(value, str):
        return value.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')
    if isinstance(value, list):
        return [well_formed(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(key): well_formed(item) for key, item in value.items()}
    return value


def decode(payload):
    # tend's JSON.stringify writes a lone surrogate as a lowercase escape, anything else as is.
    value = json.loads(payload)
    return well_formed(value) if b'\\ud' in payload else value


def executable(file, cwd, env, cached=True):
    # The file looked up on the PATH of the command's environment (as Node does), from the
    # command's directory (the helper's own now); found once per directory, PATH and name.
    if '/' in file:
        return file
    search = env.get('PATH', os.defpath)
    key = (cwd, search, file)
    if cached and key in found:
        return found[key]
    denied = None
    for directory in search.split(os.pathsep):
        candidate = os.path.join(directory or '.', file)
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
        if not os.WIFSIGNALED(self.status):
            send_json(CLOSED, self.ident, {'code': os.WEXITSTATUS(self.status), 'signal': None})
            return
        number = os.WTERMSIG(self.status)
        try:
            send_json(CLOSED, self.ident, {'code': None, 'signal': signal.Signals(number).name})
        except ValueError:
            send_json(CLOSED, self.ident, {'code': 128 + number, 'signal': None})


def start(ident, request):
    file = request['file']
    env = dict(inherited)
    env.update(request['env'])
    try:
        # The helper starts one command at a time: its own directory is the command's (every
        # time: a directory removed and made again since is another one).
        cwd = request['cwd']
        os.chdir(cwd)
        pid, out, err = spawn(file, [file] + request['args'], cwd, env)
    except OSError as error:
        code = errno.errorcode.get(error.errno, 'UNKNOWN')
        send_json(ERROR, ident, {'code': code, 'errno': -error.errno, 'syscall': 'spawn ' + file,
                                 'path': file, 'message': 'spawn ' + file + ' ' + code})
        send_json(CLOSED, ident, {'code': -error.errno, 'signal': None})
        return
    except (ValueError, TypeError) as error:
        message = str(error)
        if 'null byte' in message:
            message = 'an argument or environment variable contains a NUL byte'
        send_json(ERROR, ident, {'code': 'ERR_INVALID_ARG_VALUE', 'message': message})
        send_json(CLOSED, ident, {'code': None, 'signal': None})
        return
    command = Command(ident, pid)
    running[ident] = command
    send_json(STARTED, ident, {'pid': pid})
    selector.register(out, selectors.EVENT_READ, (command, STDOUT))
    selector.register(err, selectors.EVENT_READ, (command, STDERR))


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
selector.register(wake_read, selectors.EVENT_READ, None)
selector.register(REQUESTS, selectors.EVENT_READ, REQUESTS)

# 'ready' before any request is read, in a write of its own.
send(READY, 0)
flush()

pending = b''
while True:
    for key, _ in selector.select():
        source = key.data
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
                    start(ident, decode(pending[offset + HEADER.size:end]))
                elif kind == ENVIRONMENT:
                    inherited = decode(pending[offset + HEADER.size:end])
                offset = end
            pending = pending[offset:]
        else:
            command, kind = source
            chunk = os.read(key.fd, 1 << 16)
            if chunk:
                send(kind, command.ident, chunk)
            else:
                selector.unregister(key.fd)
                os.close(key.fd)
                command.open -= 1
                command.finish_if_done()
    if queued:
        flush()
`;
