#!/usr/bin/env python3
"""Helpers of the systemd-host scenarios (see run.sh), one subcommand each.

registrar SOCK         root: accepts registrations on SOCK for every scenario
                       and records "ROLE PID STARTTIME UID" in the scenario's
                       DIR/registered, with the kernel's word for the pid
                       (SO_PEERCRED, translated into our PID namespace, so it
                       holds under --private-pids too)
register SOCK ROLE [CMD..]
                       a process of scenario $E2E_DIR registers itself, then
                       execs CMD (same pid) if given
bomb DIR TOKEN         a bounded fork bomb: a binary tree of at most 127
                       processes that never exit; a fork refused with EAGAIN
                       is retried and noted in DIR/bomb.eagain
monitor DIR            root: counts the bomb's processes (argv "python3 e2e.py
                       bomb DIR TOKEN", TOKEN in DIR/token) every 20 ms
                       until DIR/monitor.stop exists; writes DIR/monitor.json
judge DIR              root: judges one scenario from DIR/params and what the
                       run left; prints PASS or FAIL: reasons, then kills
                       whatever the scenario left running
limits DIR KIND RC ROLE
                       root: judges how a supervisor of another scenario
                       (attack-cgroup.sh's lift-limits) ended, as judge judges
                       the limit scenario KIND (oom-election, or
                       alloc-lifted: worker-oom.sh's allocation under a
                       --memory-max its worker lifted, which nothing stops):
                       its exit code RC and DIR/ROLE.stdout; PASS or FAIL:
                       reasons
kill DIR               root: SIGKILLs whatever the scenario left running
leftovers DIR          root: PASS, or FAIL: the processes and cgroups left
snapshot DIR           root: "PID STARTTIME WHAT" of the scenario's processes
gone LISTING SECS      root: whether a snapshot's processes all end in SECS
alloc DIR TOKEN        allocates (and touches) 8 MiB at a time up to 512 MiB,
                       noting each step in DIR/alloc.mib; exits 92 if nothing
                       stopped it
hog TOKEN              spins on a CPU until killed
cpumeter DIR           root: finds the two hogs of DIR's scenario (TOKEN in
                       DIR/token), reads their cgroup's cpu.stat usage_usec 5 s
                       apart and writes DIR/cpu.json
"""
import errno
import json
import os
import re
import signal
import socket
import struct
import sys
import time


def starttime(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    return rest[19], rest[0], rest[1]  # starttime, state, ppid


def alive_same(pid, st):
    """Whether PID still runs as the process that had start time ST."""
    now = starttime(pid)
    return bool(now) and now[0] == st and now[1] != "Z"


def registrar(sock):
    """One registrar serves every scenario: a client names its scenario's
    directory (under /tmp/octo-e2e) and its role."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock)
    os.chmod(sock, 0o777)
    srv.listen(64)
    open(sock + ".ready", "w").close()
    while True:
        conn, _ = srv.accept()
        try:
            cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _gid = struct.unpack("3i", cred)
            d, _, role = conn.makefile().readline().strip().partition(" ")
            d = os.path.realpath(d)
            if os.path.dirname(d) != os.path.dirname(sock) or not re.match(r"^[a-z]+$", role):
                raise OSError(f"refused registration {d!r} {role!r} from pid {pid}")
            st = starttime(pid)
            with open(os.path.join(d, "registered"), "a") as f:
                f.write(f"{role} {pid} {st[0] if st else '?'} {uid}\n")
                f.flush()
                os.fsync(f.fileno())
            open(os.path.join(d, role + ".registered"), "w").close()
            conn.sendall(b"ok\n")
        except OSError as e:
            print(f"registrar: {e}", file=sys.stderr)
        finally:
            conn.close()


def register(sock, role, argv):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(f"{os.environ['E2E_DIR']} {role}\n".encode())
    if s.makefile().readline().strip() != "ok":
        sys.exit("register: no ok from the registrar")
    s.close()
    if argv:
        os.execvp(argv[0], argv)


def bomb(d, _token):
    level, noted = 0, False
    while level < 6:
        child = False
        for _ in range(2):
            while True:
                try:
                    pid = os.fork()
                    break
                except OSError as e:
                    if e.errno != errno.EAGAIN:
                        raise
                    if not noted:
                        noted = True
                        with open(os.path.join(d, "bomb.eagain"), "a") as f:
                            f.write(f"{os.getpid()}\n")
                    time.sleep(0.05)
            if pid == 0:
                level, child, noted = level + 1, True, False
                break
        if not child:
            break
    while True:
        time.sleep(1000)


def proc_marks(pid, token, mark, d):
    """(worker's, marked): whether the process's argv has the token or its
    environment the worker's E2E_DIR (set by the worker's wrapper, so only the
    worker's tree has it); whether its environment has the scenario's mark
    (the supervisor's and, inherited, the worker's)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read()
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = b"\0" + f.read() + b"\0"
    except OSError:
        return False, False
    worker = token.encode() in argv or b"\0E2E_DIR=" + d.encode() + b"\0" in env
    return worker, b"\0OCTO_E2E_MARK=" + mark.encode() + b"\0" in env


def pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def monitor(d):
    token = open(os.path.join(d, "token")).read().strip().encode()
    best, samples, cg = 0, 0, None
    me = os.getpid()
    while not os.path.exists(os.path.join(d, "monitor.stop")):
        n = 0
        for p in pids():
            if p == me:
                continue
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                # python3 .../e2e.py bomb DIR TOKEN: the bomb's processes only,
                # not the supervisor whose command line names them
                if len(argv) < 5 or not argv[1].endswith(b"e2e.py") or argv[2] != b"bomb" or argv[4] != token:
                    continue
                n += 1
                if cg is None:
                    cg = open(f"/proc/{p}/cgroup").read().strip().split("::", 1)[1]
            except (OSError, IndexError):
                pass
        best, samples = max(best, n), samples + 1
        time.sleep(0.02)
    limits = {}
    if cg:  # the cgroup the bomb ran in and its ancestors' pids.max, for the log
        parts = cg.strip("/").split("/")
        for i in range(len(parts), 0, -1):
            path = "/sys/fs/cgroup/" + "/".join(parts[:i])
            try:
                limits[path] = open(path + "/pids.max").read().strip()
            except OSError:
                limits[path] = "(gone)"
    json.dump({"max_processes_seen": best, "samples": samples, "cgroup": cg, "pids_max": limits},
              open(os.path.join(d, "monitor.json"), "w"), indent=1)


def alloc(d, _token):
    keep = []
    for i in range(64):
        keep.append(bytearray(b"a" * (8 << 20)))
        with open(os.path.join(d, "alloc.mib"), "w") as f:
            f.write(f"{(i + 1) * 8}\n")
    sys.exit(92)


def hog(_token):
    while True:
        pass


def hog_cgroup(token):
    """The cgroup of the hogs (argv "python3 .../e2e.py hog TOKEN"), once two run."""
    found = []
    for p in pids():
        try:
            argv = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
            if len(argv) >= 4 and argv[1].endswith(b"e2e.py") and argv[2] == b"hog" and argv[3] == token:
                found.append(open(f"/proc/{p}/cgroup").read().strip().split("::", 1)[1])
        except (OSError, IndexError):
            pass
    return found[0] if len(found) == 2 and found[0] == found[1] else None


def usage_usec(cg):
    for line in open(f"/sys/fs/cgroup{cg}/cpu.stat"):
        k, _, v = line.partition(" ")
        if k == "usage_usec":
            return int(v)
    raise OSError(f"{cg}/cpu.stat has no usage_usec")


def cpumeter(d):
    """Measures from outside the run, as the issue asks: what the worker
    tree's cgroup used over 5 s of wall time, by its cpu.stat."""
    token = open(os.path.join(d, "token")).read().strip().encode()
    out, began, cg = {}, time.monotonic(), None
    while cg is None and time.monotonic() < began + 60:
        cg = hog_cgroup(token)
        time.sleep(0.1)
    found = time.monotonic() - began
    try:
        if cg is None:
            raise OSError("the two hogs never ran in one cgroup within 60 s")
        time.sleep(1)  # both spinning
        u0, t0 = usage_usec(cg), time.monotonic()
        time.sleep(5)
        u1, t1 = usage_usec(cg), time.monotonic()
        out = {"cgroup": cg, "cpu_max": open(f"/sys/fs/cgroup{cg}/cpu.max").read().strip(),
               "cpu_s": (u1 - u0) / 1e6, "wall_s": t1 - t0, "cpus": (u1 - u0) / 1e6 / (t1 - t0)}
    except OSError as e:
        out = {"error": f"{e} (the hogs ran {found:.1f} s after the meter started)"}
    json.dump(out, open(os.path.join(d, "cpu.json"), "w"), indent=1)


def params(d):
    p = {}
    for line in open(os.path.join(d, "params")):
        m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
        if m:
            p[m.group(1)] = m.group(2).strip("'\"")
    return p


def ours(pid):
    """The executable of a process of the supervisor's side (the binary, a
    helper image, a memfd copy), else None. Scenarios run one at a time and
    nothing else in the VM runs these, so between scenarios none may run."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    return exe if "octostore" in exe or exe.startswith("/memfd:") else None


def survivors(d, p):
    """Every process of the scenario still running, as {pid: (why, side)}
    and one line each: registered pids with their start time, the worker's
    pidfile (kill -0), anything with its marker or token, and any process of
    the supervisor's side. side is "worker" for the worker's tree (registered,
    in its pidfile, its token or E2E_DIR, not our executable), else
    "supervisor"."""
    out = {}
    try:
        for line in open(os.path.join(d, "registered")):
            role, pid, st, _uid = line.split()
            if alive_same(pid, st):
                out[int(pid)] = (f"registered {role}", "worker")
    except OSError:
        pass
    if p.get("PRIVATE_PIDS") != "1":  # else the worker wrote pids of its own namespace
        for w in read(d, "worker.pids").split():
            try:
                os.kill(int(w), 0)
            except (OSError, ValueError):
                continue
            st = starttime(w)
            if st and st[1] != "Z":
                out.setdefault(int(w), ("in the worker's pidfile", "worker"))
    me = os.getpid()
    for pid in pids():
        if pid == me or pid in out:
            continue
        st = starttime(pid)
        if not st or st[1] == "Z":
            continue
        exe = ours(pid)
        worker, marked = proc_marks(pid, p["TOKEN"], p["MARK"], d)
        if exe:
            out[pid] = (f"supervisor side, {exe}", "supervisor")
        elif worker:
            out[pid] = ("the worker's token or E2E_DIR", "worker")
        elif marked:
            out[pid] = ("marked", "supervisor")
    desc = []
    for pid, (why, _side) in sorted(out.items()):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()
            cg = open(f"/proc/{pid}/cgroup").read().strip().split("::", 1)[-1]
            uid = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            cmd, cg, uid = "?", "?", "?"
        desc.append(f"pid {pid} ({why}, uid {uid}, cgroup {cg}): {cmd[:120]}")
    return out, desc


RUN_CG = re.compile(r"^run-\d+\.\d+-\d+\.\d+$")


def cgroup_leaks(d):
    before = set(open(os.path.join(d, "cgroups.before")).read().split("\n"))
    leaks = []
    for root, dirs, _files in os.walk("/sys/fs/cgroup"):
        for n in dirs:
            path = os.path.join(root, n)
            if path in before:
                continue
            populated = False
            try:
                populated = "populated 1" in open(path + "/cgroup.events").read()
            except OSError:
                pass
            if RUN_CG.match(n) or ("octostore" in n and populated):
                leaks.append(f"{path} ({'populated' if populated else 'empty'})")
    return leaks


def mode_problems(p, d):
    """Whether the scenario ran in the mode it claims (else its verdict says nothing)."""
    facts = {}
    try:
        for line in open(os.path.join(d, "mode.txt")):
            k, _, v = line.rstrip("\n").partition("=")
            facts[k] = v
    except OSError:
        return ["the command never started in its mode (no mode.txt)"]
    mode, unit = p["MODE"], p["UNIT"]
    want_uid = "1000" if mode.startswith("user") else "0"
    bad = []
    if facts.get("uid") != want_uid:
        bad.append(f"uid {facts.get('uid')}, want {want_uid}")
    cg = facts.get("cgroup", "")
    unit = re.escape(unit)
    pat = {
        "svc": rf"^/system\.slice/{unit}\.service$",
        "root-session": r"^/user\.slice/user-0\.slice/session-[^/]+\.scope$",
        "user-session": r"^/user\.slice/user-1000\.slice/session-[^/]+\.scope$",
        "user-runuser": r"^/system\.slice/octo-e2e\.service$",
        "user-scope": rf"^/user\.slice/user-1000\.slice/user@1000\.service/.*/{unit}\.scope$",
    }[p["LAUNCH"]]
    if not re.match(pat, cg):
        bad.append(f"cgroup {cg} does not match {pat}")
    if p["LAUNCH"] == "user-session":
        if facts.get("xdg") != "/run/user/1000" or facts.get("dbus") != "unix:path=/run/user/1000/bus":
            bad.append(f"session environment missing: XDG_RUNTIME_DIR={facts.get('xdg')} DBUS={facts.get('dbus')}")
    if p["LAUNCH"] == "user-runuser" and (facts.get("xdg") != "<unset>" or facts.get("dbus") != "<unset>"):
        bad.append("plain runuser should have no session environment")
    if p["LAUNCH"] == "user-scope" and facts.get("cgroup_owner") != "1000":
        bad.append(f"scope cgroup owned by {facts.get('cgroup_owner')}, not delegated to uid 1000")
    return bad


def read(d, name):
    try:
        return open(os.path.join(d, name), errors="replace").read()
    except OSError:
        return ""


def last_json(text):
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return None, "stdout is empty"
    try:
        return json.loads(lines[-1]), None
    except ValueError:
        return None, f"stdout's last line is not JSON: {lines[-1][:200]}"


def stderr_tail(d, name="stderr"):
    lines = [l for l in read(d, name).splitlines() if l.strip()]
    return " | ".join(lines[-3:])[:600] or "(empty)"


def judge_limits(p, d, rc, role=""):
    """The resource-limit scenarios (--memory-max, --cpu-max). ROLE names the
    supervisor's output (DIR/ROLE.stdout and ROLE.stderr, an attack
    scenario's); else DIR/stdout and stderr. alloc-lifted is worker-oom.sh in
    an election whose --memory-max its worker lifted: nothing stops its
    allocation (e2e.py alloc exits 92 at 512 MiB), and no limit is named."""
    kind, bad = p["KIND"], []
    out, err_out = (f"{role}.stdout", f"{role}.stderr") if role else ("stdout", "stderr")
    line, err = last_json(read(d, out))
    c = (line or {}).get("containment") or {}
    want_rc = {"oom-run": 137, "oom-election": 70, "alloc-lifted": 70, "cpu": 143, "refused": 64}.get(kind)
    if want_rc is not None and rc != want_rc:
        bad.append(f"exit {rc}, want {want_rc}; stderr: {stderr_tail(d, err_out)}")
    if kind == "refused":
        errs = read(d, "stderr")
        for want in ("--memory-max needs the memory controller, which", "does not offer: "):
            if want not in errs:
                bad.append(f"stderr does not say {want!r}: {stderr_tail(d)}")
        if read(d, "stdout").strip() or os.path.exists(os.path.join(d, "worker.pids")):
            bad.append("something ran: stdout has lines or the worker started")
        return bad
    if err:
        return bad + [err]
    if c.get("proven_empty") is not True:
        bad.append(f"containment not proven empty: {c}")
    if kind.startswith("oom") or kind == "alloc-lifted":
        if not os.path.exists(os.path.join(d, "daemon.registered")):
            bad.append("the worker's setsid daemon never started")
    if kind.startswith("oom"):
        if c.get("limit_hit") != "memory" or (c.get("oom_kills") or 0) < 1 or c.get("signal") != 9:
            bad.append(f"want limit_hit memory, oom_kills >= 1, signal 9: {c}")
        if read(d, "alloc.mib").strip() in ("", "512"):
            bad.append(f"the allocation was not stopped part way (alloc.mib {read(d, 'alloc.mib').strip()!r})")
    if kind == "alloc-lifted":
        if c.get("limit_hit") or (c.get("oom_kills") or 0) > 0:
            bad.append(f"want no limit_hit and no OOM kill (the worker lifted its memory.max): {c}")
        if read(d, "alloc.mib").strip() != "512":
            bad.append(f"the allocation was stopped part way (alloc.mib {read(d, 'alloc.mib').strip()!r}, want 512)")
    if kind in ("oom-election", "alloc-lifted"):
        want = 137 if kind == "oom-election" else 92
        if line.get("event") != "released" or line.get("worker_exit_code") != want:
            bad.append(f"want released with worker_exit_code {want}, got {line.get('event')!r} {line.get('worker_exit_code')!r}")
    if kind == "cpu":
        if c.get("limit_hit") != "timeout" or c.get("duration_ms", 0) > 3000:
            bad.append(f"want the throttled tree ended by --timeout (limit_hit timeout) within 3 s of teardown: {c}")
        m = json.loads(read(d, "cpu.json") or "{}")
        if "cpus" not in m:
            bad.append(f"cpumeter: {m.get('error', 'no measurement')}")
        elif not 0.1 <= m["cpus"] <= 0.3 or m["cpu_max"] != "25000 100000":
            bad.append(f"two hogs under --cpu-max 0.25 used {m['cpus']:.3f} CPU-s/s over {m['wall_s']:.1f} s (cpu.max {m['cpu_max']}), want at most 0.3")
    if kind == "bomb-pids" and c.get("limit_hit") != "pids":
        bad.append(f"want limit_hit pids: {c}")
    return bad


def judge_kind(p, d, rc):
    kind, bad = p["KIND"], []
    if rc is None:
        return ["the supervisor did not end within the scenario's time"]
    if kind in ("oom-run", "oom-election", "cpu", "refused"):
        return judge_limits(p, d, rc)
    if kind == "bomb-pids":
        bad = judge_limits(p, d, rc)
        kind = "bomb"
    if kind == "daemon":
        if rc != 7:
            bad.append(f"exit {rc}, want the worker's 7; stderr: {stderr_tail(d)}")
        elif not os.path.exists(os.path.join(d, "daemon.registered")):
            bad.append("the worker's setsid daemon never started")
    elif kind == "bomb":
        mon = json.loads(read(d, "monitor.json") or "{}")
        seen = mon.get("max_processes_seen", 0)
        if p.get("BOMB_EXPECT") == "cgroup-or-64" and rc == 64:
            if seen:
                bad.append(f"exit 64, yet {seen} bomb processes ran")
            return bad
        if rc not in (137, 143):
            bad.append(f"exit {rc}, want 143 or 137 (the bomb ended by --timeout 4s); stderr: {stderr_tail(d)}")
        if seen > 32:
            bad.append(f"the pids limit did not hold: {seen} bomb processes at once (--max-processes 32)")
        # the bomb must have run: under --private-pids the namespace's init
        # and its threads share the worker's pids.max (about 15 of 32 left)
        if seen < 8:
            bad.append(f"the bomb never grew (at most {seen} processes seen)")
        if not os.path.exists(os.path.join(d, "bomb.eagain")):
            bad.append("no fork of the bomb was refused: nothing stopped it")
    elif kind == "election":
        if not os.path.exists(os.path.join(d, "worker-started")):
            bad.append(f"the worker never started (exit {rc}); stderr: {stderr_tail(d)}")
        elif '"event":"leader"' not in read(d, "stdout"):
            bad.append("the worker started but stdout has no leader line")
        if rc != 143:
            bad.append(f"exit {rc}, want 143 after SIGTERM; stderr: {stderr_tail(d)}")
        line, err = last_json(read(d, "stdout"))
        if err:
            bad.append(err)
        elif line.get("event") != "released":
            bad.append(f"last line's event is {line.get('event')!r}, want 'released'")
        elif (line.get("containment") or {}).get("proven_empty") is not True:
            bad.append(f"released without containment.proven_empty=true: {line.get('containment')}")
    return bad


def judge(d):
    p = params(d)
    bad = mode_problems(p, d)
    if bad:
        print("FAIL: mode setup: " + "; ".join(bad), flush=True)
        kill(d)
        return
    rc_text = read(d, "rc").strip()
    rc = int(rc_text) if rc_text.lstrip("-").isdigit() else None
    if p["KIND"] == "control":
        left = leftovers(d, p, wait=0)
        if rc == 7 and any("registered daemon" in x for x in left) and any("/sys/fs/cgroup/run-1.1-2.2 " in x for x in left):
            print("PASS", flush=True)
        else:
            print(f"FAIL: the judge missed the daemon a worker left with no supervisor or the planted run-1.1-2.2 cgroup (exit {rc}): {left}", flush=True)
        kill(d)
        return
    bad = judge_kind(p, d, rc) + leftovers(d, p)
    print("FAIL: " + "; ".join(bad) if bad else "PASS", flush=True)
    kill(d)  # whatever is left, so that the next scenario starts clean


def leftovers(d, p, wait=5.0):
    """What the scenario left once its supervisor had exited: a process of
    the worker's tree at once (the supervisor proves that tree gone before
    it exits), processes of the supervisor's side and cgroups if still there
    after up to WAIT seconds (helpers may end just after it)."""
    alive, desc = survivors(d, p)
    bad = []
    early = [line for (pid, (_why, side)), line in zip(sorted(alive.items()), desc) if side == "worker"]
    if early:
        bad.append(f"{len(early)} processes of the worker's tree outlived the supervisor: " + "; ".join(early[:6]))
    deadline = time.time() + wait
    while True:
        leaks = cgroup_leaks(d)
        if (not alive and not leaks) or time.time() > deadline:
            break
        time.sleep(0.2)
        alive, desc = survivors(d, p)
    late = [line for (pid, (_why, side)), line in zip(sorted(alive.items()), desc) if side == "supervisor"]
    if late:
        bad.append(f"{len(late)} processes of the supervisor's side still ran {wait:g}s later: " + "; ".join(late[:6]))
    if leaks:
        bad.append("cgroups left: " + ", ".join(leaks[:6]))
    return bad


def snapshot(d):
    """Prints "PID STARTTIME DESCRIPTION" of every process of the scenario now."""
    p = params(d)
    alive, desc = survivors(d, p)
    for pid, line in zip(sorted(alive), desc):
        st = starttime(pid)
        if st:
            print(pid, st[0], line)


def gone(listing, secs):
    """Waits up to SECS for every process of a snapshot to end; prints PASS
    or FAIL: what still runs."""
    procs = []
    for line in open(listing):
        pid, st, desc = line.rstrip("\n").split(" ", 2)
        procs.append((pid, st, desc))
    if not procs:
        print("FAIL: the snapshot holds no process (nothing was running?)")
        return
    deadline = time.time() + float(secs)
    while True:
        left = [x for x in procs if alive_same(x[0], x[1])]
        if not left or time.time() > deadline:
            break
        time.sleep(0.2)
    if left:
        print(f"FAIL: {len(left)} of {len(procs)} processes still run {secs}s later: " + "; ".join(x[2] for x in left[:6]))
    else:
        print(f"PASS ({len(procs)} processes gone)")


def kill(d):
    p = params(d)
    for _ in range(50):
        alive, desc = survivors(d, p)
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    print("could not kill: " + "; ".join(desc), file=sys.stderr)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "registrar":
        registrar(args[0])
    elif cmd == "register":
        register(args[0], args[1], args[2:])
    elif cmd == "bomb":
        bomb(args[0], args[1])
    elif cmd == "monitor":
        monitor(args[0])
    elif cmd == "judge":
        judge(args[0])
    elif cmd == "kill":
        kill(args[0])
    elif cmd == "limits":
        p = params(args[0])
        p["KIND"] = args[1]
        rc = int(args[2]) if args[2].lstrip("-").isdigit() else None
        bad = ["the supervisor did not end"] if rc is None else judge_limits(p, args[0], rc, args[3])
        print("FAIL: " + "; ".join(bad) if bad else "PASS")
    elif cmd == "leftovers":
        bad = leftovers(args[0], params(args[0]))
        print("FAIL: " + "; ".join(bad) if bad else "PASS")
    elif cmd == "snapshot":
        snapshot(args[0])
    elif cmd == "gone":
        gone(args[0], args[1])
    elif cmd == "alloc":
        alloc(args[0], args[1])
    elif cmd == "hog":
        hog(args[0])
    elif cmd == "cpumeter":
        cpumeter(args[0])
    else:
        sys.exit(f"unknown subcommand {cmd}")


if __name__ == "__main__":
    main()
