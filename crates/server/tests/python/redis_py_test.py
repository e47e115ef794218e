"""cairn serve through redis-py: every command, pipelines, transactions (MULTI/EXEC/WATCH),
RESP3, auth and ACL users, TLS, errors, hostile clients with a bounded-memory check, and
kill -9 under sync durability.

Usage: redis_py_test.py CAIRN_BINARY WORK_DIR
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import redis

CAIRN, WORK = sys.argv[1], sys.argv[2]


class Server:
    """A `cairn serve` process on a free port."""

    def __init__(self, name, *flags):
        self.dir = os.path.join(WORK, name)
        self.flags = flags
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [CAIRN, "serve", self.dir, "--port", "0", *self.flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("ready: tcp "):
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(line.rsplit(":", 1)[1])
        self.tls_port = None
        if "--tls-port" in self.flags:
            line = self.proc.stdout.readline()
            if not line.startswith("ready: tls "):
                raise RuntimeError(f"no TLS listener: {line!r}")
            self.tls_port = int(line.rsplit(":", 1)[1])

    def client(self, **kw):
        return redis.Redis(port=self.port, socket_timeout=30, **kw)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0, self.proc.stderr.read()

    def kill9(self):
        self.proc.kill()
        self.proc.wait(30)


def error_of(f, *args, **kw):
    try:
        f(*args, **kw)
    except (redis.ResponseError, redis.AuthenticationError) as e:
        return str(e)
    raise AssertionError("expected an error reply")


def test_strings(r):
    assert r.ping() is True
    assert r.echo("hi") == b"hi"
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.get("missing") is None
    assert r.set("k", "v2", nx=True) is None
    assert r.set("new", "1", xx=True) is None
    assert r.set("k", "v3", xx=True) is True
    assert r.set("k", "v4", get=True) == b"v3"
    assert r.set("fresh", "x", get=True) is None
    assert r.set("t", "1", ex=100) is True
    assert 98 <= r.ttl("t") <= 100
    assert r.set("t", "2", keepttl=True) is True
    assert 98 <= r.ttl("t") <= 100
    assert r.set("t", "3") is True and r.ttl("t") == -1
    assert r.set("p", "1", px=50_000) and 49_000 <= r.pttl("p") <= 50_000
    assert r.set("a", "1", exat=int(time.time()) + 100) and 98 <= r.ttl("a") <= 100
    assert r.set("b", "1", pxat=int(time.time() * 1000) + 100_000) and 98 <= r.ttl("b") <= 100
    assert error_of(r.set, "k", "v", ex=0) == "invalid expire time in 'set' command"
    assert error_of(r.execute_command, "SET", "k", "v", "NX", "XX") == "syntax error"
    assert error_of(r.execute_command, "SET", "k", "v", "EX") == "syntax error"
    assert error_of(r.execute_command, "SET", "k", "v", "EX", "x") == "value is not an integer or out of range"
    assert r.set("gone", "soon", px=1) and time.sleep(0.05) is None and r.get("gone") is None
    assert r.getdel("k") == b"v4" and r.get("k") is None and r.getdel("k") is None
    assert r.mset({"m1": "a", "m2": "b"}) is True
    assert r.mget("m1", "nope", "m2") == [b"a", None, b"b"]
    assert error_of(r.execute_command, "MSET", "a", "b", "c") == "wrong number of arguments for 'mset' command"
    assert r.append("ap", "ab") == 2 and r.append("ap", "cd") == 4 and r.get("ap") == b"abcd"
    assert r.strlen("ap") == 4 and r.strlen("nope") == 0
    assert r.setnx("sn", 1) is True and r.setnx("sn", 2) is False
    assert r.getset("sn", 3) == b"1" and r.get("sn") == b"3"
    assert r.setex("se", 100, "v") and 98 <= r.ttl("se") <= 100
    assert r.psetex("pse", 100_000, "v") and 98 <= r.ttl("pse") <= 100
    r.set("bin", b"\x00\xff\r\n")
    assert r.get("bin") == b"\x00\xff\r\n"


def test_counters(r):
    assert r.set("n", 10) and r.incr("n") == 11 and r.get("n") == b"11"
    assert r.incrby("n", 9) == 20 and r.decr("n") == 19 and r.decrby("n", 20) == -1
    assert r.incr("fresh-counter") == 1
    r.set("txt", "abc")
    assert error_of(r.incr, "txt") == "value is not an integer or out of range"
    r.set("lead", "01")
    assert error_of(r.incr, "lead") == "value is not an integer or out of range"
    r.set("max", str(2**63 - 1))
    assert error_of(r.incr, "max") == "increment or decrement would overflow"
    assert error_of(r.incrby, "n", "x") == "value is not an integer or out of range"
    r.set("ttl-counter", 5, ex=100)
    assert r.incr("ttl-counter") == 6 and 98 <= r.ttl("ttl-counter") <= 100


def test_keys(r):
    r.mset({"d1": 1, "d2": 2, "d3": 3})
    assert r.exists("d1", "d2", "d1", "zz") == 3
    assert r.delete("d1", "d2", "d1", "zz") == 2
    assert r.unlink("d3") == 1 and r.exists("d3") == 0
    r.set("e", 1)
    assert r.ttl("e") == -1 and r.ttl("nope") == -2 and r.pttl("nope") == -2
    assert r.expire("e", 100) is True and 98 <= r.ttl("e") <= 100
    assert r.pexpire("e", 200_000) is True and 199_000 <= r.pttl("e") <= 200_000
    assert r.expire("e", 50, gt=True) is False and r.expire("e", 50, lt=True) is True
    assert r.expire("e", 10, nx=True) is False and r.expire("e", 10, xx=True) is True
    assert r.persist("e") is True and r.ttl("e") == -1 and r.persist("e") is False
    assert r.expireat("e", int(time.time()) + 100) and 98 <= r.ttl("e") <= 100
    assert r.pexpireat("e", int(time.time() * 1000) + 100_000) and 98 <= r.ttl("e") <= 100
    assert r.expire("nope", 10) is False
    assert r.expire("e", -1) is True and r.exists("e") == 0
    assert r.type("m1") == b"string" and r.type("nope") == b"none"


def test_scan_dbsize_flushdb_select(server):
    r = server.client(db=5)
    r.flushdb()
    names = [f"user:{i:03}" for i in range(250)] + ["other"]
    r.mset({n: 1 for n in names})
    assert r.dbsize() == 251
    assert sorted(r.scan_iter()) == sorted(n.encode() for n in names)
    assert sorted(r.scan_iter(match="user:1*", count=7)) == [f"user:{i}".encode() for i in range(100, 200)]
    cursor, first = r.scan(0, count=10)
    assert cursor != 0 and len(first) == 10 and first == sorted(first)
    assert error_of(r.scan, 987654321) == "invalid cursor"
    other = server.client(db=6)
    assert other.get("other") is None and other.dbsize() == 0
    assert r.flushdb() is True and r.dbsize() == 0
    assert error_of(r.execute_command, "SELECT", 16) == "DB index is out of range"


def test_server_commands(r):
    info = r.info()
    assert info["redis_version"] and info["connected_clients"] >= 1
    assert "total_commands_processed" in r.info("stats")
    assert r.info("persistence")["cairn_durability"] == "sync"
    assert r.info("persistence")["cairn_row_cache_misses"] >= 0
    assert "cmdstat_get" in r.info("commandstats")
    assert r.config_get("save") == {"save": ""}
    assert r.config_get("appendonly") == {"appendonly": "yes"}
    assert r.config_get("databases") == {"databases": "16"}
    assert r.config_get("maxmemory")["maxmemory"] == "0"
    assert r.command_count() > 40
    # redis-py parses every COMMAND reply as COMMAND INFO's: ask DOCS over a raw socket.
    port = r.connection_pool.connection_kwargs["port"]
    s, got = raw(port, b"COMMAND DOCS get\r\n")
    s.close()
    assert got.startswith(b"*2\r\n$3\r\nget\r\n*6\r\n$7\r\nsummary\r\n"), got
    assert r.client_id() > 0
    assert r.client_setname("me") is True and r.client_getname() == "me"
    # redis-py parses CLIENT INFO's fields, converting the numeric ones.
    info = r.client_info()
    assert info["id"] == r.client_id() and info["name"] == "me" and info["multi"] == -1, info
    assert info["cmd"] == "client|info" and info["user"] == "default", info
    assert r.execute_command("CLIENT", "SETINFO", "LIB-NAME", "x") in (b"OK", "OK", True)
    assert error_of(r.execute_command, "NOSUCH", "a", "b") == "unknown command 'NOSUCH', with args beginning with: 'a' 'b' "
    assert error_of(r.execute_command, "GET") == "wrong number of arguments for 'get' command"
    assert error_of(r.execute_command, "CLIENT", "BOGUS") == "unknown subcommand 'BOGUS'. Try CLIENT HELP."
    assert len(r.time()) == 2


def test_pipeline(r):
    with r.pipeline(transaction=False) as p:
        for i in range(1000):
            p.set(f"pipe:{i}", i)
            p.incr("pipe:count")
        p.get("pipe:999")
        p.incr("not-a-number-key-set-below")
        results = p.execute(raise_on_error=False)
    assert results[-2] == b"999" and results[-3] == 1000


def test_resp3(server):
    r = server.client(protocol=3)
    assert r.ping() is True
    r.set("r3", "v")
    assert r.get("r3") == b"v" and r.get("r3-missing") is None
    assert r.config_get("databases") == {b"databases": b"16"} or r.config_get("databases") == {"databases": "16"}
    assert r.mget("r3", "r3-missing") == [b"v", None]
    hello = r.execute_command("HELLO", 3)
    assert hello[b"proto"] == 3 if b"proto" in hello else hello["proto"] == 3


def test_atomic_incr(server):
    def work():
        c = server.client()
        for _ in range(200):
            c.incr("shared-counter")
            c.append("shared-append", "x")
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = server.client()
    assert r.get("shared-counter") == b"1600", r.get("shared-counter")
    assert r.strlen("shared-append") == 1600


def test_auth():
    s = Server("auth", "--requirepass", "s3cret")
    try:
        anon = s.client()
        try:
            anon.get("x")
            raise AssertionError("a client without a password was served")
        except redis.AuthenticationError as e:
            assert str(e) == "Authentication required.", e
        bad = s.client(password="wrong")
        try:
            bad.ping()
            raise AssertionError("a wrong password was accepted")
        except redis.AuthenticationError:
            pass
        good = s.client(password="s3cret")
        assert good.set("x", 1) and good.get("x") == b"1"
        assert s.client(password="s3cret", username="default").ping()
        assert s.client(password="s3cret", protocol=3).get("x") == b"1"
    finally:
        s.stop()
    anon = Server("noauth")
    try:
        assert "without any password configured" in error_of(anon.client().execute_command, "AUTH", "x")
    finally:
        anon.stop()


def test_transactions(server):
    r = server.client()
    r.delete("tx:a", "tx:b", "tx:w")
    # pipeline(transaction=True): MULTI ... EXEC, replies of every command.
    with r.pipeline(transaction=True) as p:
        p.set("tx:a", 10).incrby("tx:a", 5).get("tx:a").incr("tx:b")
        assert p.execute() == [True, 15, b"15", 1]
    # A runtime error stays inside EXEC's replies; the other commands run.
    r.set("tx:word", "abc")
    with r.pipeline(transaction=True) as p:
        p.incr("tx:word").incr("tx:b")
        got = p.execute(raise_on_error=False)
    assert isinstance(got[0], redis.ResponseError) and got[1] == 2, got

    c = server.client(single_connection_client=True)
    # DISCARD drops the queue.
    assert c.execute_command("MULTI") in (b"OK", "OK", True)
    assert c.execute_command("APPEND", "tx:discarded", "1") in (b"QUEUED", "QUEUED")
    assert c.execute_command("DISCARD") in (b"OK", "OK", True)
    assert c.get("tx:discarded") is None
    # Nested MULTI is an error; the transaction goes on.
    c.execute_command("MULTI")
    assert error_of(c.execute_command, "MULTI") == "MULTI calls can not be nested"
    c.execute_command("INCR", "tx:b")
    assert c.execute_command("EXEC") == [3]
    # A command refused while queuing aborts EXEC.
    c.execute_command("MULTI")
    c.execute_command("SET", "tx:aborted", "1")
    assert "wrong number of arguments" in error_of(c.execute_command, "GET")
    assert error_of(c.execute_command, "EXEC").startswith("Transaction discarded because of previous errors")
    assert c.get("tx:aborted") is None
    assert error_of(c.execute_command, "EXEC") == "EXEC without MULTI"

    # WATCH: a change from another connection makes EXEC fail (WatchError), nothing runs.
    other = server.client()
    r.set("tx:w", 1)
    with r.pipeline(transaction=True) as p:
        p.watch("tx:w")
        assert p.get("tx:w") == b"1"  # immediate mode after WATCH
        other.set("tx:w", 2)
        p.multi()
        p.set("tx:w", 100)
        try:
            p.execute()
            raise AssertionError("EXEC ran though a watched key changed")
        except redis.WatchError:
            pass
    assert r.get("tx:w") == b"2"

    # redis-py's optimistic-locking helper retries on WatchError: concurrent doublings
    # of a watched counter from several clients lose nothing.
    r.set("tx:counter", 0)

    def bump(pipe):
        v = int(pipe.get("tx:counter"))
        pipe.multi()
        pipe.set("tx:counter", v + 1)

    def worker():
        c = server.client()
        for _ in range(50):
            c.transaction(bump, "tx:counter")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.get("tx:counter") == b"200", r.get("tx:counter")


def test_users_and_acl():
    path = os.path.join(WORK, "users.txt")
    with open(path, "w") as f:
        f.write("# test users\nalice wonderland\nreader letmein readonly\n")
    s = Server("users", "--users", path, "--requirepass", "rootpw")
    try:
        alice = s.client(username="alice", password="wonderland")
        assert alice.acl_whoami() == "alice" or alice.acl_whoami() == b"alice"
        assert alice.set("u", "1") is True
        listing = [l if isinstance(l, str) else l.decode() for l in alice.acl_list()]
        assert any(l.startswith("user alice on") for l in listing), listing
        assert any("-@write" in l for l in listing if l.startswith("user reader")), listing
        assert not any(p in l for l in listing for p in ("wonderland", "letmein", "rootpw"))
        reader = s.client(username="reader", password="letmein")
        assert reader.get("u") == b"1"
        try:
            reader.set("u", "2")
            raise AssertionError("a read-only user wrote")
        except redis.exceptions.NoPermissionError as e:
            assert str(e) == "User reader has no permissions to run the 'set' command", e
        try:
            s.client(username="alice", password="nope").ping()
            raise AssertionError("a wrong password was accepted")
        except redis.AuthenticationError:
            pass
        assert s.client(password="rootpw").acl_whoami() in ("default", b"default")
    finally:
        s.stop()


def test_tls():
    cert, key = os.path.join(WORK, "cert.pem"), os.path.join(WORK, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True)
    s = Server("tls", "--tls-port", "0", "--tls-cert", cert, "--tls-key", key)
    try:
        t = redis.Redis(host="localhost", port=s.tls_port, ssl=True, ssl_ca_certs=cert,
                        socket_timeout=30)
        assert t.set("secure", "yes") is True
        assert t.get("secure") == b"yes"
        with t.pipeline(transaction=True) as p:
            p.incr("tls:n").incr("tls:n")
            assert p.execute() == [1, 2]
        assert s.client().get("secure") == b"yes"  # the plain listener, same store
        # A client that does not trust the certificate is refused.
        untrusting = redis.Redis(host="localhost", port=s.tls_port, ssl=True, socket_timeout=10)
        try:
            untrusting.ping()
            raise AssertionError("an unverified certificate was accepted")
        except redis.ConnectionError:
            pass
    finally:
        s.stop()


def test_tls_client_certificates():
    """--tls-ca-cert: a client certificate signed by that CA is required (or optional)."""
    cert, key = os.path.join(WORK, "cert.pem"), os.path.join(WORK, "key.pem")
    ca, ca_key = os.path.join(WORK, "clients-ca.pem"), os.path.join(WORK, "clients-ca.key")
    client, client_key = os.path.join(WORK, "client.pem"), os.path.join(WORK, "client.key")
    csr, ext = os.path.join(WORK, "client.csr"), os.path.join(WORK, "client.ext")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for cmd in (
        ["openssl", "req", "-x509", *ec, "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        ["openssl", "req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1",
         "-subj", "/CN=cairn test client CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,digitalSignature"],
        ["openssl", "req", *ec, "-keyout", client_key, "-out", csr, "-subj", "/CN=client"],
    ):
        subprocess.run(cmd, check=True, capture_output=True)
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
                    "-CAcreateserial", "-out", client, "-days", "1", "-extfile", ext],
                   check=True, capture_output=True)

    def tls_client(port, **kw):
        return redis.Redis(host="localhost", port=port, ssl=True, ssl_ca_certs=cert,
                           socket_timeout=10, **kw)

    def refused(r):
        try:
            r.ping()
        except redis.ConnectionError:
            return True
        return False

    s = Server("mtls", "--tls-port", "0", "--tls-cert", cert, "--tls-key", key,
               "--tls-ca-cert", ca)
    try:
        signed = tls_client(s.tls_port, ssl_certfile=client, ssl_keyfile=client_key)
        assert signed.set("mtls", "yes") is True
        assert signed.get("mtls") == b"yes"
        assert refused(tls_client(s.tls_port)), "a client without a certificate was served"
        # The server's own certificate is not signed by the clients' CA.
        assert refused(tls_client(s.tls_port, ssl_certfile=cert, ssl_keyfile=key))
    finally:
        s.stop()
    s = Server("mtls-optional", "--tls-port", "0", "--tls-cert", cert, "--tls-key", key,
               "--tls-ca-cert", ca, "--tls-auth-clients", "optional")
    try:
        assert tls_client(s.tls_port).ping() is True
        signed = tls_client(s.tls_port, ssl_certfile=client, ssl_keyfile=client_key)
        assert signed.ping() is True
        assert refused(tls_client(s.tls_port, ssl_certfile=cert, ssl_keyfile=key))
    finally:
        s.stop()


def raw(port, data, read=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    got = s.recv(4096) if read else b""
    return s, got


def test_protocol_errors_and_hostile_clients(server):
    good = server.client()
    good.set("alive", "yes")
    for bad, want in [
        (b"*1\r\n$999999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*99999999999\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n:5\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
        (b"x" * 70_000, b"-ERR Protocol error: too big inline request\r\n"),
        (b"*2\r\n$1\r\nab\r\n", b"-ERR Protocol error: expected CRLF after bulk string\r\n"),
        (b'set a "b\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ]:
        s, got = raw(server.port, bad)
        assert got == want, (bad[:40], got)
        assert s.recv(10) == b""  # closed
        s.close()
        assert good.get("alive") == b"yes"
    s, got = raw(server.port, b"PING\r\n")
    assert got == b"+PONG\r\n"
    s.close()

    rss_before = server.rss_kib()
    # Slow and greedy clients: each declares 30 MiB and sends a little, slowly; others
    # send garbage. The server must keep answering and its memory must stay bounded.
    hogs = []
    for i in range(50):
        s, _ = raw(server.port, b"*1\r\n$31000000\r\n" + b"a" * 10_000, read=False)
        hogs.append(s)
    for i in range(50):
        s, _ = raw(server.port, os.urandom(2000), read=False)
        hogs.append(s)
    for _ in range(5):
        t = time.time()
        assert good.get("alive") == b"yes"
        assert time.time() - t < 1.0
        for s in hogs[:50]:
            try:
                s.sendall(b"a")
            except OSError:
                pass
        time.sleep(0.1)
    grown = server.rss_kib() - rss_before
    # 50 clients x (10 KB + a 16 KiB read buffer) is about 1.5 MiB; allow for thread stacks.
    assert grown < 64 * 1024, f"RSS grew by {grown} KiB"
    for s in hogs:
        s.close()
    assert good.get("alive") == b"yes"


def test_kill9_sync():
    s = Server("kill9", "--durability", "sync")
    acked = [[] for _ in range(8)]
    stop = threading.Event()

    def writer(n):
        # Even writers send single SETs; odd ones pipelines of 16 (committed as one batch).
        c = s.client()
        i = 0
        while not stop.is_set():
            try:
                if n % 2 == 0:
                    c.set(f"w{n}:{i}", i)
                    done = [i]
                else:
                    with c.pipeline(transaction=False) as p:
                        for j in range(i, i + 16):
                            p.set(f"w{n}:{j}", j)
                        p.execute()
                    done = list(range(i, i + 16))
            except (redis.ConnectionError, redis.TimeoutError):
                return
            acked[n].extend(done)
            i += len(done)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    s.kill9()
    stop.set()
    for t in threads:
        t.join()
    total = sum(len(a) for a in acked)
    assert total > 100, total
    s.start()
    r = s.client()
    with r.pipeline(transaction=False) as p:
        for n, a in enumerate(acked):
            for i in a:
                p.get(f"w{n}:{i}")
        got = p.execute()
    missing = sum(1 for v in got if v is None)
    assert missing == 0, f"{missing} of {total} acknowledged writes lost"
    s.stop()
    print(f"    kill -9 under sync writes: all {total} acknowledged writes present")


def test_acl_changes():
    """acl_setuser, acl_getuser, acl_deluser, acl_save and acl_load, as redis-py calls them."""
    path = os.path.join(WORK, "acl-users.txt")
    with open(path, "w") as f:
        f.write("root rootpw\n")
    s = Server("acl", "--users", path)
    try:
        root = s.client(username="root", password="rootpw", decode_responses=True)
        assert root.acl_setuser("bob") is True
        bob = root.acl_getuser("bob")
        assert bob["enabled"] is False and bob["flags"] == ["off"], bob
        assert bob["passwords"] == [] and bob["keys"] == [] and bob["channels"] == [], bob
        assert bob["categories"] == ["-@all"] and bob["commands"] == [], bob
        assert root.acl_getuser("nobody") is None
        assert root.acl_setuser("bob", enabled=True, passwords=["+one", "+two"],
                                categories=["+@all", "-@write"], keys=["*"], channels=["*"]) is True
        bob = root.acl_getuser("bob")
        assert bob["enabled"] is True and bob["keys"] == ["~*"] and bob["channels"] == ["&*"], bob
        assert bob["categories"] == ["+@all", "-@write"], bob
        assert len(bob["passwords"]) == 2 and all(len(p) == 64 for p in bob["passwords"]), bob
        assert not any("one" in l or "two" in l for l in root.acl_list())
        b = s.client(username="bob", password="two", decode_responses=True)
        assert b.acl_whoami() == "bob"
        root.set("k", "v")
        assert b.get("k") == "v"
        try:
            b.set("k", "w")
            raise AssertionError("a user without @write wrote")
        except redis.exceptions.NoPermissionError as e:
            assert str(e) == "User bob has no permissions to run the 'set' command", e
        newest = root.acl_log(count=1)
        assert len(newest) == 1 and newest[0]["reason"] == "command", newest
        assert newest[0]["object"] == "set" and newest[0]["username"] == "bob", newest
        assert root.acl_log_reset() is True and root.acl_log() == []
        assert root.acl_dryrun("bob", "set", "k", "w") == \
            "This user has no permissions to run the 'set' command"
        assert root.acl_dryrun("bob", "get", "k") == "OK"
        assert "set" in root.acl_cat("write") and "keyspace" in root.acl_cat()
        assert len(root.acl_genpass()) == 64 and len(b.acl_genpass(128)) == 32
        # The change applies to the connection already authenticated.
        assert root.acl_setuser("bob", enabled=True, categories=["+@write"]) is True
        assert b.set("k", "w") is True
        assert "Cairn cannot honour" in error_of(root.acl_setuser, "bob", enabled=True, keys=["user:*"])
        assert root.acl_getuser("bob")["keys"] == ["~*"], "a refused SETUSER changed the user"
        assert root.acl_save() is True
        with open(path) as f:
            saved = f.read()
        assert "one" not in saved.split("\n", 2)[2] and "user bob on #" in saved, saved
        assert root.acl_deluser("bob", "nobody") == 1
        assert "cannot be removed" in error_of(root.acl_deluser, "default")
        try:
            b.get("k")
            raise AssertionError("a deleted user's connection ran a command")
        except redis.ConnectionError:
            pass
        assert root.acl_load() is True
        assert root.acl_getuser("bob")["enabled"] is True, "ACL LOAD brought bob back"
        assert s.client(username="bob", password="one").ping()
    finally:
        s.stop()


def test_graceful_shutdown():
    s = Server("graceful", "--durability", "buffered")
    r = s.client()
    r.set("kept", "1")
    s.stop()
    s.start()
    assert s.client().get("kept") == b"1"
    try:
        s.client().shutdown()
    except redis.ConnectionError:
        pass
    assert s.proc.wait(30) == 0


def test_memory_flags():
    # A 1 MiB memtable under a 32 MiB budget: INFO reports the budget, and 4 MB of
    # writes, several memtables' worth, all read back, before and after a restart.
    s = Server("memory", "--durability", "buffered", "--memtable-size", "1048576",
               "--memory-budget", "33554432")
    r = s.client()
    info = r.info("memory")
    assert info["cairn_memory_budget"] == 33554432, info
    value = b"v" * 200
    pipe = r.pipeline(transaction=False)
    for i in range(20000):
        pipe.set(f"mem:{i:06}", value + str(i).encode())
    pipe.execute()
    assert r.dbsize() == 20000
    for i in (0, 7777, 19999):
        assert r.get(f"mem:{i:06}") == value + str(i).encode()
    s.stop()
    s.start()
    r = s.client()
    assert r.dbsize() == 20000
    assert r.get("mem:012345") == value + b"12345"
    s.stop()
    bad = subprocess.run([CAIRN, "serve", os.path.join(WORK, "memory"), "--port", "0",
                          "--memory-budget", "1000"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "memory_budget" in bad.stderr, bad


def main():
    server = Server("main")
    r = server.client()
    tests = [
        ("strings", lambda: test_strings(r)),
        ("counters", lambda: test_counters(r)),
        ("keys", lambda: test_keys(r)),
        ("scan, dbsize, flushdb, select", lambda: test_scan_dbsize_flushdb_select(server)),
        ("server commands", lambda: test_server_commands(r)),
        ("pipeline", lambda: test_pipeline(r)),
        ("RESP3", lambda: test_resp3(server)),
        ("atomic INCR and APPEND across clients", lambda: test_atomic_incr(server)),
        ("MULTI/EXEC/WATCH/DISCARD", lambda: test_transactions(server)),
        ("users file and ACL", test_users_and_acl),
        ("ACL SETUSER, GETUSER, DELUSER, SAVE, LOAD", test_acl_changes),
        ("TLS", test_tls),
        ("TLS client certificates", test_tls_client_certificates),
        ("protocol errors and hostile clients", lambda: test_protocol_errors_and_hostile_clients(server)),
        ("auth", test_auth),
        ("kill -9 under sync durability", test_kill9_sync),
        ("graceful shutdown", test_graceful_shutdown),
        ("--memtable-size and --memory-budget", test_memory_flags),
    ]
    failed = 0
    for name, t in tests:
        try:
            t()
            print(f"ok   {name}")
        except Exception as e:  # report every failure, then exit non-zero
            failed += 1
            import traceback
            traceback.print_exc()
            print(f"FAIL {name}: {e!r}")
    server.stop()
    if failed:
        sys.exit(f"{failed} redis-py test(s) failed")
    print("redis-py suite: all passed")


main()
