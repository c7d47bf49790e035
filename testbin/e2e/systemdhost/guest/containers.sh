# The supervisor inside a real container engine: Debian's Podman, rootful
# and rootless (tester), on the Debian 13 VM (run.sh's SET=containers).
# Sourced by run.sh, whose say, record, token and new_dir it uses.
#
# The image is made here, with no registry: a tree of the VM's own (Debian)
# dash, sleep and setsid with the libraries they load, and the supervisor,
# imported with `podman import`. Containers get no network. Podman's defaults
# are what CI jobs get: root without CAP_SYS_ADMIN, a cgroup namespace of
# its own with cgroup2 mounted read-only, PID 1 of a PID namespace.
#
# ENGINE/KIND, ENGINE root or rootless; each judged from the VM, as root:
#   run-daemon     `podman exec` into a running container (its PID 1 a
#                  sleep): run --json with a setsid daemon; exit 7 (the
#                  worker's), stderr names the process-group backend and the
#                  read-only cgroup2, proven_empty, nothing of the tree in
#                  the container's cgroup; doctor there says the worker
#                  scope is entered under no_new_privs
#   run-forkbomb   the same with a shell fork bomb (127 shells) under
#                  --timeout 4s: it grows, then exit 143 or 137, nothing left
#   election-stop  the supervisor as the container's PID 1 runs an election
#                  on the local authority; `podman stop` (SIGTERM) gives
#                  released with proven_empty and exit 143
#   pid1           the supervisor as PID 1 runs a command that leaves a setsid
#                  daemon and an orphan; exits with the command's 7
#   privileged     (root) --privileged: cgroup2 is writable, so the cgroup
#                  backend is used (stderr says so); exit 7, proven empty
#   cap-sys-admin  (root) --cap-add SYS_ADMIN: the worker scope no longer
#                  needs no_new_privs (doctor says so), --private-pids works,
#                  exit 7, nothing left
# Every scenario also proves that no process carrying its marker (an odd
# sleep length) is left anywhere in the VM.
CONTAINER_SCENARIOS=(
  root/run-daemon root/run-forkbomb root/election-stop root/pid1 root/cap-sys-admin root/privileged
  rootless/run-daemon rootless/run-forkbomb rootless/election-stop rootless/pid1
)
CTR_IMAGE=localhost/octo-e2e:latest

pm() { # ENGINE ARGS...: podman as root, or as tester (rootless)
  local engine=$1
  shift
  if [ "$engine" = rootless ]; then
    (cd /tmp && runuser -u tester -- env HOME=/home/tester XDG_RUNTIME_DIR=/run/user/1000 \
      DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus podman "$@")
  else
    podman "$@"
  fi
}

# ctr_tree DIR: the image's root: the programs the scenarios run, their
# libraries (as ldd lists them) and the supervisor, merged-/usr as Debian is.
ctr_tree() {
  local t=$1 prog lib
  mkdir -p "$t/usr/bin" "$t/usr/lib" "$t/usr/lib64" "$t/usr/local/bin" "$t/tmp" "$t/run" "$t/etc"
  ln -s usr/bin "$t/bin"
  ln -s usr/lib "$t/lib"
  ln -s usr/lib64 "$t/lib64"
  chmod 1777 "$t/tmp"
  for prog in /usr/bin/dash /usr/bin/sleep /usr/bin/setsid; do
    cp "$prog" "$t/usr/bin/"
    for lib in $(ldd "$prog" | grep -o '/[^ ]*'); do
      cp -L --parents "$lib" "$t/"
    done
  done
  ln -s dash "$t/usr/bin/sh"
  cp "$SUP" /usr/local/bin/octostore "$t/usr/local/bin/"
  # an election's worker is one program: a daemon and a sleep, both marked
  printf '#!/bin/sh\nsetsid sleep "$E2E_MARK" &\nexec sleep "$E2E_MARK"\n' >"$t/usr/local/bin/e2e-worker"
  chmod 0755 "$t/usr/local/bin/e2e-worker"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$t/etc/passwd"
}

ctr_setup() { # imports the image for root and for tester
  local t=/tmp/octo-e2e/ctr-tree engine
  rm -rf "$t"
  ctr_tree "$t"
  for engine in root rootless; do
    tar -C "$t" -c . | pm $engine import - "$CTR_IMAGE" >/dev/null || return 1
  done
}

# ctr_survivors PID1: the live processes of the cgroup subtree of the
# container whose PID 1 is PID1 (the VM's pid), other than PID 1 (zombies
# have left their cgroup already).
ctr_survivors() {
  local cg
  cg=$(sed -n 's/^0:://p' "/proc/$1/cgroup") || return 0
  find "/sys/fs/cgroup$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | grep -vx "$1" |
    while read -r p; do echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
}

# marked_left MARK: every live process in the VM whose argv carries MARK
# (one grep over every cmdline: a scan per process is too slow under TCG).
marked_left() {
  local f p state
  for f in $(grep -lsw -- "$1" /proc/[0-9]*/cmdline); do
    p=${f%/cmdline}
    # gone since (the grep itself, whose argv carries MARK too) or a zombie
    state=$(sed 's/.*) //' "$p/stat" 2>/dev/null | cut -d' ' -f1)
    [ -z "$state" ] || [ "$state" = Z ] || echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
  done
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds; 1 on timeout.
wait_for() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}
# marked_running MARK N: at least N processes carry MARK (a zombie's argv is
# empty, so it is not one); one grep, quick enough to see a fork bomb.
marked_running() { [ "$(grep -lsw -- "$1" /proc/[0-9]*/cmdline | wc -l)" -ge "$2" ]; }
ctr_logs_have() { pm "$1" logs "$2" 2>/dev/null | grep -q -- "$3"; }

# The scenarios of one engine: each sets BAD (its problems) and RC, and
# leaves its output in D. Those that `podman exec` share one container,
# CID (PID 1 a sleep, host pid PID1), started by ctr_engine.

ctr_run_daemon() {
  pm "$ENGINE" exec "$CID" octostore-supervisor run --json -- sh -c "$DAEMON" >"$D/stdout" 2>"$D/stderr"
  RC=$?
  [ "$RC" = 7 ] || BAD+=("exit $RC, want the worker's 7")
  ctr_exec_judge
  pm "$ENGINE" exec "$CID" octostore-supervisor doctor >"$D/doctor.txt" 2>&1
  grep -q '^worker scope (default) *yes .*entered under no_new_privs (no CAP_SYS_ADMIN)' "$D/doctor.txt" ||
    BAD+=("doctor does not say the worker scope is entered under no_new_privs")
}

ctr_run_forkbomb() {
  pm "$ENGINE" exec "$CID" octostore-supervisor run --json --timeout 4s -- sh -c \
    "b() { [ \$1 -lt 6 ] && { b \$((\$1+1)) & b \$((\$1+1)) & }; sleep $MARK; }; b 0" >"$D/stdout" 2>"$D/stderr" &
  local run=$!
  wait_for 30 marked_running "$MARK" 64 || BAD+=("the bomb never grew to 64 processes")
  wait "$run"
  RC=$?
  [ "$RC" = 143 ] || [ "$RC" = 137 ] || BAD+=("exit $RC, want 143 or 137 (ended by --timeout 4s)")
  ctr_exec_judge
}

# ctr_exec_judge: what the supervisor said, and nothing in the container's
# cgroup but its PID 1.
ctr_exec_judge() {
  local left
  [ -n "$PID1" ] || BAD+=("podman gave no pid for the container's PID 1: $(tail -n 3 "$R/logs/ctr-setup.log")")
  grep -q 'containment: process-group (cgroup v2 unavailable:.*read-only' "$D/stderr" ||
    BAD+=("stderr does not name the process-group backend and the read-only cgroup2")
  left=$(ctr_survivors "$PID1")
  [ -z "$left" ] || BAD+=("left in the container's cgroup: $(echo $left)")
}

# ctr_election_stop: the supervisor as PID 1, its output read back from
# podman's log: a file conmon writes as the lines come (k8s-file), where
# journald, rootful podman's default, may not yet have them.
ctr_election_stop() {
  local cid
  cid=$(pm "$ENGINE" run -d --log-driver k8s-file --network none -e E2E_MARK="$MARK" "$CTR_IMAGE" \
    octostore-supervisor election --server local "room-$MARK" cand /usr/local/bin/e2e-worker 2>>"$D/launch.err")
  wait_for 40 marked_running "$MARK" 2 || BAD+=("the worker and its daemon never both ran")
  # the leader line follows the worker's start
  wait_for 20 ctr_logs_have "$ENGINE" "$cid" '"event":"leader"' || BAD+=("no leader line within 20 s of the worker's start")
  pm "$ENGINE" stop -t 20 "$cid" >>"$D/launch.err" 2>&1 || BAD+=("podman stop failed: $(tail -n 2 "$D/launch.err")")
  RC=$(pm "$ENGINE" inspect -f '{{.State.ExitCode}}' "$cid" 2>>"$D/launch.err")
  pm "$ENGINE" logs "$cid" >"$D/stdout" 2>"$D/stderr"
  pm "$ENGINE" rm -f -t 0 "$cid" >/dev/null 2>>"$D/launch.err"
  [ "$RC" = 143 ] || BAD+=("exit $RC, want 143 after podman stop's SIGTERM")
  tail -n 1 "$D/stdout" | grep -q '"event":"released".*"proven_empty":true' ||
    BAD+=("the last line is not released with proven_empty: $(tail -n 1 "$D/stdout")")
}

ctr_pid1() { # [PODMAN FLAGS...]: run as PID 1, a daemon and an orphan left
  pm "$ENGINE" run --rm --network none "$@" "$CTR_IMAGE" octostore-supervisor run --json \
    $([ $# -eq 0 ] || echo --private-pids) -- sh -c "(sleep 0.1 &); $DAEMON" >"$D/stdout" 2>"$D/stderr"
  RC=$?
  [ "$RC" = 7 ] || BAD+=("exit $RC, want the command's 7")
}

ctr_privileged() {
  pm "$ENGINE" run --rm --network none --privileged "$CTR_IMAGE" octostore-supervisor run --json -- \
    sh -c "$DAEMON" >"$D/stdout" 2>"$D/stderr"
  RC=$?
  [ "$RC" = 7 ] || BAD+=("exit $RC, want the command's 7")
  grep -q 'containment: cgroup under /sys/fs/cgroup/' "$D/stderr" || BAD+=("stderr does not name the cgroup backend")
}

ctr_cap_sys_admin() {
  ctr_pid1 --cap-add SYS_ADMIN
  pm "$ENGINE" run --rm --network none --cap-add SYS_ADMIN "$CTR_IMAGE" octostore-supervisor doctor >"$D/doctor.txt" 2>&1
  grep -q '^worker scope (default) *yes .*entered with CAP_SYS_ADMIN' "$D/doctor.txt" ||
    BAD+=("doctor does not say the worker scope is entered with CAP_SYS_ADMIN")
  grep -q '^isolation --private-pids *yes' "$D/doctor.txt" || BAD+=("doctor does not offer --private-pids")
}

ctr_scenario() { # NAME
  local name=$1 kind=${1#*/} left
  D=$(new_dir "ctr-${name//\//--}")
  MARK=4$(token | cut -c1-6) # the sleeps' length: the marker
  DAEMON="setsid sleep $MARK & sleep 0.3; exit 7"
  BAD=() RC=
  "ctr_${kind//-/_}"
  case $kind in
  run-* | pid1 | cap-sys-admin | privileged)
    tail -n 1 "$D/stdout" | grep -q '"proven_empty":true' || BAD+=("the run line has no proven_empty: $(tail -n 1 "$D/stdout")") ;;
  esac
  left=$(marked_left "$MARK")
  [ -z "$left" ] || BAD+=("left in the VM: $(echo $left)")
  marked_left "$MARK" | awk '{print $1}' | xargs -r kill -KILL 2>/dev/null
  ctr_record "$name" "$D" "$RC" "${BAD[@]}"
}

ctr_record() { # NAME DIR RC PROBLEMS...
  local name=$1 d=$2 rc=$3 verdict=PASS
  shift 3
  [ $# -eq 0 ] || verdict="FAIL: $(printf '%s; ' "$@")"
  {
    echo "== $name: $verdict"
    echo "== exit code: $rc"
    echo "== stdout"; tail -n 20 "$d/stdout" 2>/dev/null
    echo "== stderr"; tail -n 40 "$d/stderr" 2>/dev/null
    echo "== doctor"; cat "$d/doctor.txt" 2>/dev/null
    echo "== podman's errors"; cat "$d/launch.err" 2>/dev/null
  } >"$R/logs/${name//\//--}.log" 2>&1
  record "$name" "${verdict%; }"
}

# ctr_engine ENGINE: that engine's selected scenarios, around one container
# for those that exec into it.
ctr_engine() {
  local n
  ENGINE=$1
  CID=$(pm "$ENGINE" run -d --network none "$CTR_IMAGE" sleep 3600 2>>"$R/logs/ctr-setup.log")
  PID1=$(pm "$ENGINE" inspect -f '{{.State.Pid}}' "$CID" 2>>"$R/logs/ctr-setup.log")
  for n in "${CONTAINER_SCENARIOS[@]}"; do
    [ "${n%%/*}" = "$ENGINE" ] && selected "$n" || continue
    out_of_time "$n" && continue
    ctr_scenario "$n"
  done
  pm "$ENGINE" rm -f -t 0 "$CID" >/dev/null 2>>"$R/logs/ctr-setup.log"
}

container_scenarios() {
  local n
  for n in "${CONTAINER_SCENARIOS[@]}"; do
    selected "$n" && echo "PLAN $n" >>"$R/results.txt"
  done
  if ! ctr_setup >>"$R/logs/ctr-setup.log" 2>&1; then
    for n in "${CONTAINER_SCENARIOS[@]}"; do
      selected "$n" && record "$n" "FAIL: the image could not be imported: $(tail -n 3 "$R/logs/ctr-setup.log")"
    done
    return
  fi
  ctr_engine root
  ctr_engine rootless
}
