"""Stand-in servers for the netproxy tests, run as one process (threads):

  https  TLS server (test CA) answering any HTTP request with "hello from NAME"
  echo   TCP echo; on the client's end of stream it sends "BYE:<local addr>" and closes,
         so a test can see that data still flows after a half-close, and where it landed
  count  accepts, counts and closes: proves whether a dial happened at all
  hold   accepts, counts and keeps the connection open without reading
  dns    UDP DNS answering A/AAAA from a table; a list of answer sets is served in
         turn (the last repeats: DNS rebinding), "drop" never answers, "nxdomain"

Usage: npservers.py CONFIG.json. Prints one JSON line {"name": port, ...} when every
server is bound. Counts go to the status file named in the config (rewritten
atomically on every event): {"accepts": {name: n}, "dns": {"name/A": n}}.
"""
import json
import os
import socket
import ssl
import struct
import sys
import threading

lock = threading.Lock()
status = {"accepts": {}, "dns": {}}
status_path = None


def save():
    tmp = status_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(status, f)
    os.replace(tmp, status_path)


def bump(section, key):
    with lock:
        status[section][key] = status[section].get(key, 0) + 1
        save()


def listener(cfg):
    family = socket.AF_INET6 if ":" in cfg["addr"] else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if cfg["addr"] == "::" else 1)
    s.bind((cfg["addr"], cfg.get("port", 0)))
    s.listen(cfg.get("backlog", 512))
    return s


def serve(sock, name, handler):
    while True:
        try:
            c, _ = sock.accept()
        except OSError:
            return
        bump("accepts", name)
        threading.Thread(target=handler, args=(c,), daemon=True).start()


def echo_handler(c):
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
        c.sendall(b"BYE:" + c.getsockname()[0].encode())
        c.shutdown(socket.SHUT_WR)
        while c.recv(65536):
            pass
    except OSError:
        pass
    c.close()


def count_handler(c):
    c.close()


held = []


def hold_handler(c):
    held.append(c)


def https_handler_factory(ctx, name):
    def handler(c):
        try:
            t = ctx.wrap_socket(c, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                d = t.recv(4096)
                if not d:
                    break
                data += d
            body = ("hello from %s\n" % name).encode()
            t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % len(body) + body)
            t.close()
        except (OSError, ssl.SSLError):
            c.close()
    return handler


def dns_name(data, off):
    labels = []
    while True:
        n = data[off]
        off += 1
        if n == 0:
            return ".".join(labels), off
        labels.append(data[off:off + n].decode("latin-1"))
        off += n


def dns_server(sock, table):
    served = {}
    while True:
        try:
            data, peer = sock.recvfrom(4096)
        except OSError:
            return
        try:
            qid = data[:2]
            name, off = dns_name(data, 12)
            qtype, qclass = struct.unpack(">HH", data[off:off + 4])
        except (IndexError, struct.error):
            continue
        question = data[12:off + 4]
        lname = name.lower().rstrip(".")
        tname = {1: "A", 28: "AAAA"}.get(qtype, str(qtype))
        key = "%s/%s" % (lname, tname)
        bump("dns", key)
        entry = table.get(lname)
        rcode, answers = 0, []
        if entry == "drop":
            continue
        if entry is None or entry == "nxdomain":
            rcode = 3
        else:
            sets = entry.get(tname, [])
            if sets:
                i = served.get(key, 0)
                served[key] = i + 1
                answers = sets[min(i, len(sets) - 1)]
        rr = b""
        for a in answers:
            fam = socket.AF_INET6 if ":" in a else socket.AF_INET
            rdata = socket.inet_pton(fam, a)
            rr += struct.pack(">HHHIH", 0xC00C, qtype, 1, 0, len(rdata)) + rdata
        flags = 0x8180 | rcode
        resp = qid + struct.pack(">HHHHH", flags, 1, len(answers), 0, 0) + question + rr
        sock.sendto(resp, peer)


def main():
    global status_path
    cfg = json.load(open(sys.argv[1]))
    status_path = cfg["status"]
    save()
    ports = {}
    for s in cfg["servers"]:
        kind, name = s["kind"], s["name"]
        status["accepts"].setdefault(name, 0)
        if kind == "dns":
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            u.bind((s["addr"], s.get("port", 0)))
            ports[name] = u.getsockname()[1]
            threading.Thread(target=dns_server, args=(u, s["table"]), daemon=True).start()
            continue
        sock = listener(s)
        ports[name] = sock.getsockname()[1]
        if kind == "https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(s["cert"], s["key"])
            handler = https_handler_factory(ctx, name)
        else:
            handler = {"echo": echo_handler, "count": count_handler, "hold": hold_handler}[kind]
        threading.Thread(target=serve, args=(sock, name, handler), daemon=True).start()
    with lock:
        save()
    print(json.dumps(ports), flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
