#!/usr/bin/env bash
# Two agents, one election room, no server and no network (`make demo` builds the
# binaries and runs this; you can read it from top to bottom).
#
# Both agents are `octostore-supervisor election <room> <candidate> <worker>` with
# the embedded hold on the host-local authority (`--server local`): the room is an
# exclusive file lock in a state directory. One leads and runs its worker; the
# other waits. Then we SIGKILL the leader's hold process. The kernel drops its file
# lock at once, so the second agent's hold wins the room almost immediately - but
# its supervisor starts its worker only after the first supervisor has killed the
# first worker's whole tree (including a daemonized grandchild) and proven it gone.
# The second worker checks that itself, through /proc, as it starts; the
# timestamps printed at the end show the order. The demo reads the supervisors'
# stdout (JSON lines) and never parses their stderr: a worker's output shares
# that stream and could forge any line on it.
set -uo pipefail
cd "$(dirname "$0")"
# OCTOSTORE_DEMO_BIN: where the binaries are (the test suite runs this script
# with its own builds); `make demo` builds them into bin/.
bin=${OCTOSTORE_DEMO_BIN:-$PWD/bin}
work=$(mktemp -d /tmp/octostore-demo.XXXXXX)
chmod 700 "$work"
# A private state directory, so the demo touches nothing of yours.
export XDG_RUNTIME_DIR=$work/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work" 2>/dev/null || { sleep 0.5; rm -rf "$work"; }
}
trap cleanup EXIT

now() { date +%H:%M:%S.%3N; }
say() { printf '%s [demo]    %s\n' "$(now)" "$*"; }
# Boot-time clock in nanoseconds (continues through suspend): what the workers
# and the demo compare, immune to wall-clock steps.
boottime_ns() { awk '{ printf "%d\n", $1 * 1e9 }' /proc/uptime; }

# The worker: first checks that no other agent's worker or daemon is still
# alive, then says what it does, starts a daemonized grandchild (setsid, the
# classic escape from process groups) and records when it started and when it
# finished.
cat > "$work/worker.sh" <<'EOF'
#!/usr/bin/env bash
name=$1
start=$(date +%s%N)
# alive <pid>: a process that can still run (a zombie has ended).
alive() { local s; s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ "${s%% *}" != Z ]; }
for f in "$DEMO_DIR"/*.worker.pid "$DEMO_DIR"/*.daemon.pid; do
  [ -e "$f" ] || continue
  p=$(cat "$f")
  alive "$p" && echo "${f##*/} $p" >> "$DEMO_DIR/$name.saw-alive"
done
echo $$ > "$DEMO_DIR/$name.worker.pid"
echo "$start" > "$DEMO_DIR/$name.worker-started"
echo "$(date +%H:%M:%S.%3N) [$name]  worker started with fencing term $OCTOSTORE_FENCING_TERM"
setsid sh -c 'echo $$ > "$DEMO_DIR/'"$name"'.daemon.pid"; exec sleep 600' &
# pause: sleep without starting a process (the supervisor sends TERM to every
# process that appears in the worker's tree while it stops it).
mkfifo "$DEMO_DIR/$name.fifo" 2>/dev/null
exec 3<>"$DEMO_DIR/$name.fifo"
pause() { read -r -t "$1" -u 3; }
# On TERM it cleans up for a while, as real work does; meanwhile the other
# agent may already have the room, but must not start its worker yet.
trap 'echo "             [$name]  worker: got TERM, cleaning up for 0.8 s"; pause 0.8; date +%s%N > "$DEMO_DIR/$name.worker-finished"; exit 0' TERM
i=0
while :; do
  i=$((i + 1))
  echo "$(date +%H:%M:%S.%3N) [$name]  worker: step $i of the protected work"
  pause 0.5
done
EOF
chmod +x "$work/worker.sh"
for a in agent-a agent-b; do
  printf '#!/bin/sh\nexec %s %s\n' "$work/worker.sh" "$a" > "$work/$a"
  chmod +x "$work/$a"
done
export DEMO_DIR=$work

room=$("$bin/octostore" election create --server local --json | sed -n 's/.*"election_id":"\([^"]*\)".*/\1/p')
[ -n "$room" ] || { echo "demo: could not create a room" >&2; exit 1; }
say "state directory $XDG_RUNTIME_DIR/octostore, room $room"

# start <agent>: one supervisor; its stdout lines (supervisor lines only) are
# stamped and shown, and kept in $work/<agent>.out. The worker's output goes to
# the supervisor's stderr, shown as it comes (and never parsed).
start() {
  local a=$1
  "$bin/octostore-supervisor" election --server local --ttl 10 \
    "$room" "$a" "$work/$a" \
    > >(while IFS= read -r l; do printf '%s [%s] %s\n' "$(now)" "$a" "$l"; printf '%s %s\n' "$(date +%s%N)" "$l" >> "$work/$a.out"; done) &
  pids+=($!)
  echo $! > "$work/$a.pid"
  say "started $a (supervisor pid $!)"
}

wait_for() { # wait_for <file> <pattern> <seconds>
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

touch "$work/agent-a.out" "$work/agent-b.out"
start agent-a
sleep 0.5
start agent-b

leader=""
for ((i = 0; i < 100; i++)); do
  for a in agent-a agent-b; do
    grep -q '"event":"leader"' "$work/$a.out" && leader=$a
  done
  [ -n "$leader" ] && break
  sleep 0.1
done
[ -n "$leader" ] || { echo "demo: nobody became leader" >&2; exit 1; }
other=agent-b
[ "$leader" = agent-b ] && other=agent-a
sleep 2
say "$leader leads; $other waits (its worker has not started: $( [ -e "$work/$other.worker-started" ] && echo WRONG || echo right))"

# Find the leader's hold: the process running this binary's embedded hold whose
# ancestor is the leader's supervisor. We only signal a process we started.
sup=$(cat "$work/$leader.pid")
hold_pid=""
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  tr '\0' ' ' 2>/dev/null < "$d/cmdline" | grep -q -- '__octostore-hold' || continue
  q=$p
  while [ -n "$q" ] && [ "$q" -gt 1 ]; do
    q=$(awk '{ print $4 }' "/proc/$q/stat" 2>/dev/null)
    if [ "$q" = "$sup" ]; then hold_pid=$p; break 2; fi
  done
done
[ -n "$hold_pid" ] || { echo "demo: cannot find $leader's hold process" >&2; exit 1; }
daemon=$(cat "$work/$leader.daemon.pid")
say "SIGKILL to $leader's hold (pid $hold_pid): its file lock is released by the kernel now"
kill -KILL "$hold_pid"

wait "$sup"
code=$?
say "$leader's supervisor exited $code (70: its hold died without a terminal event, so it printed no terminal line)"
if [ -e "/proc/$daemon" ]; then
  echo "demo: $leader's daemonized grandchild (pid $daemon) is STILL RUNNING" >&2
  exit 1
fi
say "$leader's worker tree, daemonized grandchild $daemon included, is gone"

wait_for "$work/$other.out" '"event":"leader"' 15 || { echo "demo: $other never became leader" >&2; exit 1; }
wait_for "$work/$other.worker-started" . 5 || { echo "demo: $other's worker never started" >&2; exit 1; }
started=$(cat "$work/$other.worker-started")
sleep 1.2
stamp() { date -d "@${1:0:10}.${1:10:3}" +%H:%M:%S.%3N; }
if [ -e "$work/$other.saw-alive" ]; then
  echo "demo: $other's worker started while these were still running: $(tr '\n' ' ' < "$work/$other.saw-alive")" >&2
  exit 1
fi
if [ -e "$work/$leader.worker-finished" ]; then
  finished=$(cat "$work/$leader.worker-finished")
  say "$leader's worker finished its clean-up at $(stamp "$finished")"
fi
say "$other's worker started at                 $(stamp "$started"), and found (in /proc) $leader's worker and daemon gone"
if [ -z "${finished:-}" ] || [ "$finished" -lt "$started" ]; then
  say "containment came first${finished:+, by $(((started - finished) / 1000000)) ms}"
else
  echo "demo: $other's worker started BEFORE $leader's worker finished" >&2
  exit 1
fi

osup=$(cat "$work/$other.pid")
say "stopping $other with SIGTERM"
kill -TERM "$osup"
wait "$osup"
code=$?
say "$other's supervisor exited $code (143: stopped by SIGTERM after containment and release)"
odaemon=$(cat "$work/$other.daemon.pid")
if [ -e "/proc/$odaemon" ]; then
  echo "demo: $other's daemonized grandchild (pid $odaemon) is STILL RUNNING" >&2
  exit 1
fi
pids=()
say "done: nothing the demo started is left"
