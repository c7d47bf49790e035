#!/usr/bin/env python3
"""Helpers of attack-cgroup.sh and user-manager.sh, as root but for
clone-into, one subcommand each (e2e.py's kill and leftovers are used as
they are).

terminal FILE          the last JSON line of a supervisor's stdout: prints
                       "EVENT PROVEN_EMPTY WORKER_EXIT_CODE BACKEND" (run's
                       exit_code for WORKER_EXIT_CODE; - for a missing
                       field), or "none: why"
hb-order FIRST SECOND  heartbeat files (one uptime a line): PASS when every
                       heartbeat of SECOND is later than the last of FIRST,
                       else FAIL: how they overlap
hb-after FILE UPTIME SECS
                       PASS once FILE has a heartbeat later than UPTIME,
                       waiting up to SECS; else FAIL: its last one
foreign SCOPE          the cgroups below SCOPE other than its supervisor/
                       leaf and the runs (run-P.S-P.S, with hold/ and
                       worker/ leaves), the attack's run-999999.1-999998.1
                       included, one path a line, deepest first
thaw SCOPE             writes 0 to every cgroup.freeze below SCOPE
cgroups-of DIR ROLE    "PID CGROUP" of every process whose environment has
                       E2E_DIR=DIR and E2E_ROLE=ROLE (a role's worker tree,
                       as the kernel places it)
clone-into CGDIR TOKEN the attacker's (not root's): starts a child born in
                       the cgroup CGDIR (clone3 with CLONE_INTO_CGROUP),
                       which becomes "sleep 1000.TOKEN"; prints "ok PID" or
                       "refused ERROR"
"""
import json
import os
import re
import sys
import time

RUN = re.compile(r"^run-\d+\.\d+-\d+\.\d+$")
FAKE = "run-999999.1-999998.1"


def terminal(path):
    try:
        lines = [l for l in open(path, errors="replace").read().splitlines() if l.strip()]
    except OSError as e:
        return f"none: {e}"
    if not lines:
        return "none: stdout is empty"
    try:
        last = json.loads(lines[-1])
    except ValueError:
        return f"none: the last line is not JSON: {lines[-1][:160]}"
    c = last.get("containment") or {}
    def f(v):
        return "-" if v is None else str(v).lower()
    return " ".join([f(last.get("event")), f(c.get("proven_empty")), f(last.get("worker_exit_code", last.get("exit_code"))), f(c.get("backend"))])


def beats(path):
    try:
        return [float(x) for x in open(path).read().split()]
    except (OSError, ValueError):
        return []


def hb_order(first, second):
    a, b = beats(first), beats(second)
    if not a:
        return f"FAIL: {os.path.basename(first)} has no heartbeat"
    if not b:
        return f"FAIL: {os.path.basename(second)} has no heartbeat"
    if b[0] <= a[-1]:
        both = [x for x in b if x <= a[-1]]
        return (f"FAIL: {os.path.basename(second)} beat at {b[0]:.2f} while {os.path.basename(first)} still beat "
                f"(its last at {a[-1]:.2f}); {len(both)} beats of the second before the first's last")
    return f"PASS ({len(a)} then {len(b)} beats; the second's first {b[0] - a[-1]:.2f}s after the first's last)"


def hb_after(path, uptime, secs):
    deadline = time.time() + float(secs)
    while True:
        b = beats(path)
        if b and b[-1] > float(uptime):
            return f"PASS (a beat at {b[-1]:.2f}, after {float(uptime):.2f})"
        if time.time() > deadline:
            return f"FAIL: no heartbeat after {float(uptime):.2f} within {secs}s (the last at {b[-1] if b else 'none'})"
        time.sleep(0.1)


def foreign(scope):
    out = []
    for root, dirs, _files in os.walk(scope):
        rel = os.path.relpath(root, scope)
        for n in dirs:
            parts = [] if rel == "." else rel.split(os.sep)
            parts.append(n)
            ok = (parts == ["supervisor"] or (RUN.match(parts[0]) and parts[0] != FAKE and
                  (len(parts) == 1 or (len(parts) == 2 and parts[1] in ("hold", "worker")))))
            if not ok:
                out.append(os.path.join(root, n))
    return sorted(out, key=lambda p: -p.count("/"))


def thaw(scope):
    for root, _dirs, files in os.walk(scope):
        if "cgroup.freeze" in files:
            try:
                with open(os.path.join(root, "cgroup.freeze"), "w") as f:
                    f.write("0\n")
            except OSError as e:
                print(f"thaw {root}: {e}", file=sys.stderr)


def cgroups_of(d, role):
    want = [b"E2E_DIR=" + d.encode(), b"E2E_ROLE=" + role.encode()]
    for p in sorted(int(x) for x in os.listdir("/proc") if x.isdigit()):
        try:
            env = open(f"/proc/{p}/environ", "rb").read().split(b"\0")
            if all(w in env for w in want):
                cg = open(f"/proc/{p}/cgroup").read().strip().split("::", 1)[1]
                print(p, cg)
        except (OSError, IndexError):
            pass


def clone_into(cgdir, token):
    import ctypes
    import signal

    class CloneArgs(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in (
            "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack",
            "stack_size", "tls", "set_tid", "set_tid_size", "cgroup")]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    try:
        fd = os.open(cgdir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        print(f"refused open: {e.strerror}")
        return
    args = CloneArgs(flags=0x200000000, exit_signal=signal.SIGCHLD, cgroup=fd)  # CLONE_INTO_CGROUP
    pid = libc.syscall(ctypes.c_long(435), ctypes.byref(args), ctypes.c_size_t(ctypes.sizeof(args)))  # clone3
    if pid == 0:  # not holding the caller's pipe open
        null = os.open("/dev/null", os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(null, i)
        os.execv("/bin/sleep", ["sleep", "1000." + token])
    if pid < 0:
        print("refused " + os.strerror(ctypes.get_errno()))
    else:
        print(f"ok {pid}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "terminal":
        print(terminal(args[0]))
    elif cmd == "hb-order":
        print(hb_order(args[0], args[1]))
    elif cmd == "hb-after":
        print(hb_after(args[0], args[1], args[2]))
    elif cmd == "foreign":
        for p in foreign(args[0]):
            print(p)
    elif cmd == "thaw":
        thaw(args[0])
    elif cmd == "cgroups-of":
        cgroups_of(args[0], args[1])
    elif cmd == "clone-into":
        clone_into(args[0], args[1])
    else:
        sys.exit(f"unknown subcommand {cmd}")


if __name__ == "__main__":
    main()
