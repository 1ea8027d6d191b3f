#!/usr/bin/python3.11 -IBS
"""pyexec: the code-execution spoke. One process per session.

It is an MCP server on stdin/stdout (newline-delimited JSON-RPC 2.0) with one tool,
`run`, that executes Python code in a namespace kept between runs (variables,
functions, imports), captures what the code prints (bounded), returns exceptions as
errors with their traceback, and interrupts a run that exceeds its time limit
(SIGALRM -> KeyboardInterrupt, repeated every half second). Code that ignores the
interrupt is ended by the hub: the call's deadline (time limit + grace) kills the
session's whole sandbox.

The code runs in this process, so it can reach the MCP channel: it is the spoke, and
everything it could send is untrusted to the hub, which bounds and validates every
frame like any spoke's. The channel is moved off descriptors 0/1 so that ordinary
writes to fd 1 and 2 (C extensions, os.write) are captured as output instead of
corrupting the protocol.

Started by the hub as `python3.11 -I -B -S` (isolated mode: no environment variables,
no user site, no site-packages, script directory not on sys.path).
"""

import _ast  # the C module: `ast` itself costs more to import than the rest together
import builtins
import fcntl
import json
import os
import signal
import sys
import types

# traceback and linecache are imported at the first error: a session that never fails
# never pays for them.

PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
RUNNER_FILE = __file__

# What the frames may carry: the hub's frames are at most 1 MiB and JSON escapes a
# control character in 6 bytes, so output + error, twice (text and structured), fit.
OUTPUT_MAX = 32768
ERROR_MAX = 16384
# Re-raise the interrupt at this interval while the code keeps running after it.
INTERRUPT_REPEAT_S = 0.5

# Must equal config/spokes/code.json: the hub compares them when the spoke starts.
TOOL = {
    "name": "run",
    "description": (
        "Executes Python code in this session (no network, no subprocesses; /data and "
        "/tmp are private). Returns what it printed and, when it raised, the traceback. "
        "The value of a final expression is printed. Runs longer than the time limit "
        "are interrupted."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "maxLength": 1048576},
            "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 600000},
        },
        "required": ["code"],
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["ok", "error"]},
            "output": {"type": "string"},
            "error": {"type": "string"},
            "truncated": {"type": "boolean"},
            "timed_out": {"type": "boolean"},
        },
        "required": ["status", "output", "error"],
    },
}


def log(msg):
    """The spoke's log (the hub keeps it per session); never the protocol channel."""
    try:
        os.write(LOG_FD, ("pyexec: %s\n" % msg).encode("utf-8", "backslashreplace"))
    except OSError:
        pass


class Capture:
    """sys.stdout and sys.stderr of the code: keeps the first OUTPUT_MAX characters
    written since the last run's answer (background threads included)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.truncated = False
        self.buffer = BinaryCapture(self)

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        room = self.limit - self.size
        if room <= 0:
            if s:
                self.truncated = True
            return len(s)
        if len(s) > room:
            self.parts.append(s[:room])
            self.size += room
            self.truncated = True
        else:
            self.parts.append(s)
            self.size += len(s)
        return len(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def fileno(self):
        # C code that asks for the descriptor writes to fd 1, which is captured too.
        return 1

    def take(self):
        text = "".join(self.parts)
        truncated = self.truncated
        self.parts, self.size, self.truncated = [], 0, False
        return text, truncated


class BinaryCapture:
    """sys.stdout.buffer: bytes written there join the text (decoded as UTF-8)."""

    def __init__(self, text):
        self.text = text

    def write(self, b):
        self.text.write(bytes(b).decode("utf-8", "replace"))
        return len(b)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def fileno(self):
        return 1


class EmptyInput:
    """sys.stdin: nobody is there to type, so input() ends at once (EOFError)."""

    encoding = "utf-8"

    def read(self, n=-1):
        return ""

    def readline(self, n=-1):
        return ""

    def readlines(self, n=-1):
        return []

    def isatty(self):
        return False

    def readable(self):
        return True

    def fileno(self):
        return 0

    def close(self):
        pass


class Session:
    def __init__(self, time_limit_s):
        self.time_limit_s = time_limit_s
        module = types.ModuleType("__main__")
        module.__dict__["__builtins__"] = builtins
        # The code's namespace is __main__, so pickle, dataclasses and `import
        # __main__` see the code's own definitions rather than this runner.
        sys.modules["__main__"] = module
        self.ns = module.__dict__
        self.cells = 0
        self.sources = []  # (name, code) of every cell, for tracebacks
        self.registered = 0  # how many of them linecache knows
        self.running = False
        self.timed_out = False
        self.out = Capture(OUTPUT_MAX)
        sys.stdout = sys.stderr = self.out
        sys.stdin = EmptyInput()
        signal.signal(signal.SIGALRM, self.on_alarm)

    def on_alarm(self, signum, frame):
        if self.running:
            self.timed_out = True
            raise KeyboardInterrupt

    def arm(self, seconds):
        self.timed_out = False
        self.running = True
        signal.setitimer(signal.ITIMER_REAL, seconds, INTERRUPT_REPEAT_S)

    def disarm(self):
        self.running = False
        signal.setitimer(signal.ITIMER_REAL, 0, 0)

    def fd_output(self):
        """What was written to descriptors 1 and 2 directly (C code, os.write), and
        whether some of it was dropped."""
        try:
            size = os.fstat(1).st_size
            if size <= 0:
                return "", False
            data = os.pread(1, min(size, OUTPUT_MAX * 4), 0)
            os.ftruncate(1, 0)
            return data.decode("utf-8", "replace"), size > len(data)
        except OSError:
            return "", False

    def run(self, code, timeout_s):
        self.cells += 1
        name = "<cell %d>" % self.cells
        try:
            body, tail = compile_cell(code, name)
        except BaseException as e:  # SyntaxError, ValueError (NUL), MemoryError, ...
            # Where in the compiler it failed is of no interest: the message only.
            import traceback

            return self.answer(False, "".join(traceback.format_exception_only(e)))
        # Tracebacks show the source of this cell, also from functions called later.
        self.sources.append((name, code))
        if "linecache" in sys.modules:
            self.register_sources()
        ok, err = True, ""
        # Kept from the start: the time limit covers printing the result and formatting
        # the traceback too (a __repr__ or __str__ may loop forever).
        self.arm(timeout_s)
        try:
            try:
                exec(body, self.ns)
                if tail is not None:
                    value = eval(tail, self.ns)
                    if value is not None:
                        self.ns["_"] = value
                        self.out.write(repr(value) + "\n")
            except BaseException as e:
                ok = False
                self.register_sources()
                err = format_exception(e)
                if self.timed_out:
                    err += (
                        "TimeoutError: the run exceeded its time limit of %g s and was "
                        "interrupted\n" % timeout_s
                    )
        except BaseException as e:  # the interrupt arrived while formatting
            ok = False
            err = "%s while reporting an error (time limit %g s)\n" % (
                type(e).__name__,
                timeout_s,
            )
        finally:
            self.disarm()
        timed_out = self.timed_out
        return self.answer(ok, err, timed_out)

    def register_sources(self):
        import linecache

        for name, code in self.sources[self.registered :]:
            linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        self.registered = len(self.sources)

    def answer(self, ok, err, timed_out=False):
        text, truncated = self.out.take()
        raw, raw_truncated = self.fd_output()
        text += raw
        truncated = truncated or raw_truncated
        if len(text) > OUTPUT_MAX:
            text, truncated = text[:OUTPUT_MAX], True
        if len(err) > ERROR_MAX:
            # The end of a traceback says what happened: keep the head and the tail.
            half = ERROR_MAX // 2
            err = err[:half] + "\n...[traceback truncated]...\n" + err[-half:]
        result = {
            "status": "ok" if ok else "error",
            "output": clean(text),
            "error": clean(err),
        }
        if truncated:
            result["truncated"] = True
        if timed_out:
            result["timed_out"] = True
        return result


def compile_cell(code, name):
    """Compiles code; a final expression statement is compiled apart so that its value
    can be printed, as an interactive interpreter would."""
    tree = compile(code, name, "exec", _ast.PyCF_ONLY_AST)
    tail = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        tail = compile(_ast.Expression(tree.body.pop().value), name, "eval")
    return compile(tree, name, "exec"), tail


def strip_runner(te, seen):
    """Drops this runner's frames from a TracebackException and its chain."""
    import traceback

    while te is not None and id(te) not in seen:
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if f.filename != RUNNER_FILE]
        )
        if te.__cause__ is not None:
            strip_runner(te.__cause__, seen)
        te = te.__context__


def format_exception(e):
    try:
        import traceback

        te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
        strip_runner(te, set())
        return "".join(te.format())
    except Exception:
        return "%s (the exception could not be formatted)\n" % type(e).__name__


def clean(s):
    """Text the hub's JSON parser accepts: valid UTF-8 (lone surrogates escaped), no
    NUL characters."""
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s.replace("\x00", "\\x00")


# ---- the MCP channel ----


class Channel:
    def __init__(self, in_fd, out_fd):
        self.fd = out_fd
        self.rfile = os.fdopen(in_fd, "rb", buffering=65536, closefd=False)

    def read(self):
        return self.rfile.readline()

    def send(self, msg):
        data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def reply(self, rid, result):
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def error(self, rid, code, message):
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def call_tool(session, params):
    if not isinstance(params, dict) or params.get("name") != TOOL["name"]:
        return None, "unknown tool"
    args = params.get("arguments")
    if not isinstance(args, dict) or not isinstance(args.get("code"), str):
        return None, "arguments must hold \"code\" as a string"
    timeout_ms = args.get("timeout_ms")
    timeout_s = session.time_limit_s
    if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool) and timeout_ms > 0:
        timeout_s = timeout_ms / 1000.0
    sc = session.run(args["code"], timeout_s)
    text = sc["output"]
    if sc["error"]:
        text += sc["error"]
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": sc,
        "isError": sc["status"] == "error",
    }, None


def serve(chan, session):
    while True:
        line = chan.read()
        if not line:
            return 0
        try:
            msg = json.loads(line)
        except ValueError:
            chan.error(None, -32700, "parse error")
            continue
        if not isinstance(msg, dict):
            chan.error(None, -32600, "invalid request")
            continue
        method, rid = msg.get("method"), msg.get("id")
        if method is None or rid is None:
            continue  # a notification, or an answer to nobody
        if method == "initialize":
            asked = (msg.get("params") or {}).get("protocolVersion")
            chan.reply(
                rid,
                {
                    "protocolVersion": asked if asked in SUPPORTED_VERSIONS else PROTOCOL_VERSION,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "pyexec", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            chan.reply(rid, {"tools": [TOOL]})
        elif method == "tools/call":
            result, why = call_tool(session, msg.get("params"))
            if result is None:
                chan.error(rid, -32602, why)
            else:
                chan.reply(rid, result)
        elif method == "ping":
            chan.reply(rid, {})
        else:
            chan.error(rid, -32601, "method not found")


def setup_descriptors():
    """Moves the channel off 0/1 (one socket from the hub, two pipes in a manual run)
    and points 1 and 2 at a capture file."""
    global LOG_FD
    chan_in, chan_out = os.dup(0), os.dup(1)  # close-on-exec, as Python makes them
    LOG_FD = os.dup(2)
    null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    os.dup2(null, 0, inheritable=False)
    os.close(null)
    cap = os.memfd_create("pyexec-output", os.MFD_CLOEXEC)
    fcntl.fcntl(cap, fcntl.F_SETFL, fcntl.fcntl(cap, fcntl.F_GETFL) | os.O_APPEND)
    os.dup2(cap, 1, inheritable=False)
    os.dup2(cap, 2, inheritable=False)
    os.close(cap)
    return chan_in, chan_out


LOG_FD = 2


def main():
    try:
        limit_ms = int(os.environ.get("PYEXEC_TIME_LIMIT_MS", "10000"))
    except ValueError:
        limit_ms = 10000
    chan = Channel(*setup_descriptors())
    session = Session(max(limit_ms, 100) / 1000.0)
    # Warm what every run uses, so that the first run costs no more than the others.
    session.run("", session.time_limit_s)
    session.cells = 0
    try:
        return serve(chan, session)
    except (BrokenPipeError, ConnectionResetError):
        return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        import traceback

        log("runner failed:\n" + traceback.format_exc())
        sys.exit(1)
