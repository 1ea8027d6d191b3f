"""A stand-in OAuth authorization server for tests/serve/test_serve_oauth.sh, on loopback:
its RFC 8414 metadata and JWKS (an RSA and a P-256 key), and tokens minted by the test,
the attacker's among them (python3-cryptography signs; nothing here is an OAuth library).

  oauth_issuer.py serve DIR      keys into DIR, then serve; the port goes to DIR/port
  oauth_issuer.py rotate DIR     a second RSA key joins the set (kid rsa2)
  oauth_issuer.py mint DIR KIND [CLAIM=JSON...]   a token on stdout
  oauth_issuer.py mint-loop DIR  the same for each line of stdin (KIND and CLAIM=JSON
                                 separated by tabs), one token a line: one Python start
                                 for all of a test's tokens
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n, size=None):
    size = size or (n.bit_length() + 7) // 8
    return b64(n.to_bytes(size, "big"))


def load(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def save(path, key):
    with open(path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


def jwk(kid, key):
    pub = key.public_key().public_numbers()
    if isinstance(key, rsa.RSAPrivateKey):
        return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": uint(pub.n),
                "e": uint(pub.e)}
    return {"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256", "x": uint(pub.x, 32),
            "y": uint(pub.y, 32)}


def jwks(d):
    keys = [jwk("rsa1", load(d + "/rsa1.pem")), jwk("ec1", load(d + "/ec1.pem"))]
    if os.path.exists(d + "/rsa2.pem"):
        keys.append(jwk("rsa2", load(d + "/rsa2.pem")))
    return {"keys": keys}


def sign(header, claims, key=None, secret=None):
    data = (b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())).encode()
    alg = header.get("alg")
    if alg == "none":
        sig = b""
    elif secret is not None:
        sig = hmac.new(secret, data, hashlib.sha256).digest()
    elif isinstance(key, rsa.RSAPrivateKey):
        sig = key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    else:
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return data.decode() + "." + b64(sig)


def mint(d, kind, extra):
    now = int(time.time())
    issuer = open(d + "/issuer").read().strip()
    claims = {"iss": issuer, "aud": open(d + "/audience").read().strip(), "sub": "alice",
              "scope": "app:*", "iat": now, "exp": now + 300}
    for kv in extra:
        k, v = kv.split("=", 1)
        v = json.loads(v)
        if v is None:
            claims.pop(k, None)
        else:
            claims[k] = v
    rsa1, ec1 = load(d + "/rsa1.pem"), load(d + "/ec1.pem")
    if kind == "rs256":
        return sign({"alg": "RS256", "kid": "rsa1", "typ": "JWT"}, claims, rsa1)
    if kind == "es256":
        return sign({"alg": "ES256", "kid": "ec1", "typ": "JWT"}, claims, ec1)
    if kind == "rsa2":
        return sign({"alg": "RS256", "kid": "rsa2", "typ": "JWT"}, claims, load(d + "/rsa2.pem"))
    if kind == "none":
        return sign({"alg": "none", "typ": "JWT"}, claims)
    if kind == "wrong-key":  # the attacker's own key, under the issuer's kid
        evil_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return sign({"alg": "RS256", "kid": "rsa1", "typ": "JWT"}, claims, evil_rsa)
    if kind == "hs256-pubkey":  # the issuer's public key as an HMAC secret
        pem = rsa1.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo)
        return sign({"alg": "HS256", "kid": "rsa1", "typ": "JWT"}, claims, secret=pem)
    if kind == "kid-confusion":  # ES256 under the RSA key's kid, signed by the attacker
        evil_ec = ec.generate_private_key(ec.SECP256R1())
        return sign({"alg": "ES256", "kid": "rsa1", "typ": "JWT"}, claims, evil_ec)
    if kind == "alg-swap":  # RS256 under the EC key's kid
        return sign({"alg": "RS256", "kid": "ec1", "typ": "JWT"}, claims, rsa1)
    if kind == "tampered":  # a valid token whose claims were changed afterwards
        t = sign({"alg": "RS256", "kid": "rsa1", "typ": "JWT"}, claims, rsa1).split(".")
        c2 = dict(claims, sub="root")
        return t[0] + "." + b64(json.dumps(c2).encode()) + "." + t[2]
    raise SystemExit("unknown kind " + kind)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        d = self.server.dir
        issuer = open(d + "/issuer").read().strip()
        if self.path == "/.well-known/oauth-authorization-server":
            body = {"issuer": issuer, "jwks_uri": issuer + "/jwks.json",
                    "token_endpoint": issuer + "/token"}
        elif self.path == "/jwks.json":
            body = jwks(d)
            with open(d + "/jwks-fetches", "a") as f:
                f.write("x\n")
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def main():
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "serve":
        save(d + "/rsa1.pem", rsa.generate_private_key(public_exponent=65537, key_size=2048))
        save(d + "/ec1.pem", ec.generate_private_key(ec.SECP256R1()))
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        srv.dir = d
        with open(d + "/issuer", "w") as f:
            f.write("http://127.0.0.1:%d" % srv.server_address[1])
        with open(d + "/port.tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        os.rename(d + "/port.tmp", d + "/port")
        srv.serve_forever()
    elif cmd == "rotate":
        save(d + "/rsa2.pem", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    elif cmd == "mint":
        print(mint(d, sys.argv[3], sys.argv[4:]))
    elif cmd == "mint-loop":
        for line in sys.stdin:
            kind, *extra = line.rstrip("\n").split("\t")
            print(mint(d, kind, extra), flush=True)


main()
