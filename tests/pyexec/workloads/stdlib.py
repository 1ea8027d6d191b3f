# A workload for the python seccomp preset: the standard library as people use it.
# Run in a session by tests/pyexec (it must succeed) and traced by
# scripts/trace-python-seccomp (the syscalls it makes are what the preset allows).
import json, re, math, cmath, collections, itertools, functools, operator, datetime, time, calendar
import decimal, fractions, random, statistics, hashlib, hmac, secrets, base64, binascii, struct
import csv, io, textwrap, string, typing, dataclasses, enum, pathlib, heapq, bisect, copy, pickle
import zlib, gzip, bz2, lzma, zipfile, tarfile, sqlite3, unicodedata, uuid, tempfile, shutil, glob, fnmatch
import array, contextlib, abc, traceback, inspect, ast, dis, pprint, difflib, html, html.parser
import xml.etree.ElementTree as ET, email, email.message, urllib.parse, locale, codecs, weakref, gc
import queue, threading, concurrent.futures, asyncio, select, signal, resource, mmap, errno, stat
import zoneinfo, sched, numbers, types, warnings, logging, argparse, shlex, platform, getpass, os, sys
print(math.sqrt(2), decimal.Decimal(1)/7, fractions.Fraction(3, 9), statistics.mean([1,2,3]))
print(hashlib.sha256(b"x").hexdigest()[:8], hashlib.md5(b"x").hexdigest()[:8], base64.b64encode(b"hi"))
print(datetime.datetime.now().year > 2000, time.time() > 0, time.monotonic() > 0, time.process_time() >= 0)
random.seed(1); print(random.random(), secrets.token_hex(4) != "", uuid.uuid4().version)
print(json.dumps({"a": [1, 2]}), re.sub(r"\d", "#", "a1b2"), pickle.loads(pickle.dumps({1: 2})))
print(zlib.decompress(zlib.compress(b"abc")), bz2.decompress(bz2.compress(b"abc")), lzma.decompress(lzma.compress(b"abc")))
db = sqlite3.connect(":memory:"); db.execute("create table t(x)"); db.execute("insert into t values(1)"); print(db.execute("select * from t").fetchall())
d = tempfile.mkdtemp(); p = pathlib.Path(d) / "f.txt"; p.write_text("hello"); print(p.read_text(), os.listdir(d)); shutil.rmtree(d)
with open("/data/state.txt", "w") as f: f.write("x")
print(os.stat("/data/state.txt").st_size, glob.glob("/data/*"))
with zipfile.ZipFile("/tmp/z.zip", "w") as z: z.writestr("a", "b")
with tarfile.open("/tmp/t.tgz", "w:gz") as t: t.add("/data/state.txt")
with gzip.open("/tmp/g.gz", "wb") as g: g.write(b"x")
m = mmap.mmap(-1, 4096); m[:3] = b"abc"; print(m[:3]); m.close()
print(resource.getrlimit(resource.RLIMIT_AS), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0)
print(os.cpu_count(), platform.system(), platform.machine(), os.getpid(), os.getppid(), os.uname().sysname)
print(zoneinfo.ZoneInfo("Europe/Paris").key if zoneinfo.available_timezones() else "no tz")
print(ET.fromstring("<a><b>1</b></a>").find("b").text, html.escape("<"), urllib.parse.urlparse("https://x.org/p").netloc)
print(locale.getpreferredencoding(), sys.getfilesystemencoding(), getpass.getuser())
logging.basicConfig(level=logging.INFO); logging.info("log line")
print(shlex.split("a 'b c'"), inspect.signature(print) if False else "sig", len(dis.Bytecode("1+1").dis()) > 0)
print(select.select([], [], [], 0), signal.getsignal(signal.SIGINT))
r, w = os.pipe(); os.write(w, b"p"); print(os.read(r, 1)); os.close(r); os.close(w)
print(os.getloadavg() if hasattr(os, "getloadavg") else None)
print("workload done")
