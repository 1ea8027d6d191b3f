"""A client inside a test spoke's network namespace (np_egress.py runs it with `ip netns
exec`): one JSON command per line on stdin, one JSON answer per line on stdout. It does
what a server in a jail would: DNS queries to its resolver (raw, UDP or TCP), lookups
through glibc, TCP connections to whatever address (optionally speaking TLS with a
chosen SNI, or sending raw bytes), UDP datagrams, and runs programs (curl, node)."""
import base64
import errno
import json
import os
import random
import socket
import ssl
import struct
import subprocess
import sys


def dns_query(name, qtype=1, edns=True, qid=None, raw=None):
    if raw is not None:
        return base64.b64decode(raw)
    qid = random.randrange(65536) if qid is None else qid
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1 if edns else 0)
    for label in name.split("."):
        b = label.encode()
        q += bytes([len(b)]) + b
    q += b"\0" + struct.pack(">HH", qtype, 1)
    if edns:
        q += b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0)
    return q


def parse_answer(data):
    qid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", data[:12])
    off = 12
    qname = b""
    for _ in range(qd):
        while data[off]:
            n = data[off]
            qname += data[off + 1:off + 1 + n] + b"."
            off += 1 + n
        off += 5
    answers, ede = [], None
    for i in range(an + ns + ar):
        if data[off] & 0xC0 == 0xC0:
            off += 2
        else:
            while data[off]:
                off += 1 + data[off]
            off += 1
        rtype, rclass, ttl, rdlen = struct.unpack(">HHIH", data[off:off + 10])
        off += 10
        rdata = data[off:off + rdlen]
        off += rdlen
        if rtype == 1 and i < an:
            answers.append(socket.inet_ntoa(rdata))
        if rtype == 41:
            o = 0
            while o + 4 <= len(rdata):
                code, olen = struct.unpack(">HH", rdata[o:o + 4])
                if code == 15:
                    ede = {"code": struct.unpack(">H", rdata[o + 4:o + 6])[0],
                           "text": rdata[o + 6:o + 4 + olen].decode(errors="replace")}
                o += 4 + olen
    return {"id": qid, "rcode": flags & 0xF, "aa": bool(flags & 0x400), "answers": answers,
            "ede": ede, "qname": qname.decode(errors="replace").rstrip("."), "ttl": None}


def do_dns(c):
    q = dns_query(c.get("name", ""), c.get("qtype", 1), c.get("edns", True), raw=c.get("raw"))
    server = (c["server"], c.get("port", 53))
    timeout = c.get("timeout", 2.0)
    try:
        if c.get("tcp"):
            s = socket.create_connection(server, timeout=timeout)
            s.sendall(struct.pack(">H", len(q)) + q)
            buf = b""
            while len(buf) < 2 or len(buf) < 2 + struct.unpack(">H", buf[:2])[0]:
                d = s.recv(4096)
                if not d:
                    return {"error": "closed"}
                buf += d
            s.close()
            data = buf[2:]
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(timeout)
            s.sendto(q, server)
            data, _ = s.recvfrom(4096)
            s.close()
    except socket.timeout:
        return {"error": "timeout"}
    except OSError as e:
        return {"error": errno.errorcode.get(e.errno, str(e))}
    return parse_answer(data)


def do_flood(c):
    """Sends n queries as fast as it can, then counts the answers within a second."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    for i in range(c["n"]):
        s.sendto(dns_query(c["name"], qid=i & 0xFFFF), (c["server"], 53))
    s.settimeout(1.0)
    got = 0
    try:
        while True:
            s.recvfrom(4096)
            got += 1
    except socket.timeout:
        pass
    s.close()
    return {"answered": got}


def do_lookup(c):
    try:
        infos = socket.getaddrinfo(c["name"], c.get("port", 443), socket.AF_UNSPEC,
                                   socket.SOCK_STREAM)
        return {"addrs": sorted({i[4][0] for i in infos})}
    except socket.gaierror as e:
        return {"gaierror": e.errno, "message": str(e)}


def read_until_closed(s, limit=1 << 16):
    data = b""
    try:
        while len(data) < limit:
            d = s.recv(65536)
            if not d:
                break
            data += d
        return data, None
    except socket.timeout:
        return data, "timeout"
    except ConnectionResetError:
        return data, "ECONNRESET"
    except ssl.SSLError as e:
        return data, "ssl: " + e.reason if e.reason else str(e)
    except OSError as e:
        return data, errno.errorcode.get(e.errno, str(e))


def do_connect(c):
    timeout = c.get("timeout", 3.0)
    try:
        s = socket.create_connection((c["host"], c["port"]), timeout=timeout)
    except OSError as e:
        return {"connect_error": errno.errorcode.get(e.errno, str(e))}
    out = {"connected": True}
    try:
        if "tls" in c:
            ctx = ssl.create_default_context(cafile=c.get("ca"))
            sni = c["tls"].get("sni")
            if sni is None:
                ctx.check_hostname = False
            try:
                t = ctx.wrap_socket(s, server_hostname=sni)
            except ssl.SSLError as e:
                out["error"] = "ssl: %s" % (e.reason or e)
                return out
            except (ConnectionResetError, BrokenPipeError) as e:
                out["error"] = "ECONNRESET"
                return out
            except OSError as e:
                out["error"] = errno.errorcode.get(e.errno, str(e))
                return out
            t.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
                      (c["tls"].get("host") or sni or "x").encode())
            data, err = read_until_closed(t)
        else:
            if "send" in c:
                try:
                    s.sendall(base64.b64decode(c["send"]))
                    if c.get("shut"):
                        s.shutdown(socket.SHUT_WR)
                except OSError as e:
                    out["error"] = errno.errorcode.get(e.errno, str(e))
                    return out
            data, err = read_until_closed(s, c.get("limit", 1 << 16))
        out["data"] = base64.b64encode(data).decode()
        if err:
            out["error"] = err
    finally:
        s.close()
    return out


def do_udp(c):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(base64.b64decode(c["data"]), (c["host"], c["port"]))
        return {"sent": True}
    except OSError as e:
        return {"error": errno.errorcode.get(e.errno, str(e))}
    finally:
        s.close()


def do_run(c):
    env = dict(os.environ)
    env.update(c.get("env", {}))
    try:
        p = subprocess.run(c["argv"], capture_output=True, timeout=c.get("timeout", 20), env=env)
        return {"status": p.returncode, "stdout": p.stdout.decode(errors="replace"),
                "stderr": p.stderr.decode(errors="replace")[-2000:]}
    except subprocess.TimeoutExpired:
        return {"status": None, "error": "timeout"}
    except FileNotFoundError:
        return {"status": None, "error": "not found"}


OPS = {"dns": do_dns, "flood": do_flood, "lookup": do_lookup, "connect": do_connect,
       "udp": do_udp, "run": do_run}

for line in sys.stdin:
    cmd = json.loads(line)
    try:
        res = OPS[cmd["op"]](cmd)
    except Exception as e:  # answered, so that the test reports it instead of hanging
        res = {"exception": repr(e)}
    print(json.dumps(res), flush=True)
