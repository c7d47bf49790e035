# Sourced by demo.sh and demo-cluster.sh (read demo.sh first): two agents on
# one election room, their worker, and the hand-over with containment first.
# The sourcing script sets $server (the authority's --server) and may add pids
# to $services: processes the agents depend on, stopped after them when the
# demo ends or fails.
#
# The demo reads the supervisors' stdout (JSON lines) and never parses their
# stderr: a worker's output shares that stream and could forge any line on it.
set -uo pipefail
# OCTOSTORE_DEMO_BIN: where the binaries are (the test suite runs the demos
# with its own builds); make builds them into bin/.
bin=${OCTOSTORE_DEMO_BIN:-$PWD/bin}
work=$(mktemp -d /tmp/octostore-demo.XXXXXX)
chmod 700 "$work"
# A private state directory, so the demo touches nothing of yours.
export XDG_RUNTIME_DIR=$work/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
pids=()
services=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for p in "${services[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work" 2>/dev/null || { sleep 0.5; rm -rf "$work"; }
}
trap cleanup EXIT

now() { date +%H:%M:%S.%3N; }
say() { printf '%s [demo]    %s\n' "$(now)" "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

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
# agent may already have the room, but must not start its worker yet. The
# finishing time comes from bash itself ($EPOCHREALTIME, microseconds): a date
# process started now would be one more process in the tree being stopped,
# and get its TERM.
trap 'echo "             [$name]  worker: got TERM, cleaning up for 0.8 s"; pause 0.8; echo "${EPOCHREALTIME/./}000" > "$DEMO_DIR/$name.worker-finished"; exit 0' TERM
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
  touch "$work/$a.out"
done
export DEMO_DIR=$work

# create_room: a new election on $server; its id in $room.
create_room() {
  room=$("$bin/octostore" election create --server "$server" --json | sed -n 's/.*"election_id":"\([^"]*\)".*/\1/p')
  [ -n "$room" ] || die "could not create a room on $server"
}

# start <agent> <ttl>: one supervisor on $room; its stdout lines (supervisor
# lines only) are stamped and shown, and kept in $work/<agent>.out. The
# worker's output goes to the supervisor's stderr, shown as it comes (and
# never parsed).
start() {
  local a=$1
  "$bin/octostore-supervisor" election --server "$server" --ttl "$2" \
    "$room" "$a" "$work/$a" \
    > >(while IFS= read -r l; do printf '%s [%s] %s\n' "$(now)" "$a" "$l"; printf '%s %s\n' "$(date +%s%N)" "$l" >> "$work/$a.out"; done) &
  pids+=($!)
  echo $! > "$work/$a.pid"
  say "started $a (supervisor pid $!)"
}

# start_agents <ttl>: agent-a, then agent-b, and waits until one leads.
start_agents() {
  start agent-a "$1"
  sleep 0.5
  start agent-b "$1"
  await_leader
}

wait_for() { # wait_for <file> <pattern> <seconds>
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# await_leader: sets $leader and $other once one agent leads, and shows that
# the other's worker has not started.
await_leader() {
  leader=""
  for ((i = 0; i < 300; i++)); do
    for a in agent-a agent-b; do
      grep -q '"event":"leader"' "$work/$a.out" && leader=$a
    done
    [ -n "$leader" ] && break
    sleep 0.1
  done
  [ -n "$leader" ] || die "nobody became leader"
  other=agent-b
  [ "$leader" = agent-b ] && other=agent-a
  sleep 2
  say "$leader leads; $other waits (its worker has not started: $( [ -e "$work/$other.worker-started" ] && echo WRONG || echo right))"
}

# hold_of <agent>: the pid of the agent's hold, the process running this
# binary's embedded hold whose ancestor is the agent's supervisor. We only
# signal a process we started.
hold_of() {
  local sup p q d
  sup=$(cat "$work/$1.pid")
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    tr '\0' ' ' 2>/dev/null < "$d/cmdline" | grep -q -- '__octostore-hold' || continue
    q=$p
    while [ -n "$q" ] && [ "$q" -gt 1 ]; do
      q=$(awk '{ print $4 }' "/proc/$q/stat" 2>/dev/null)
      if [ "$q" = "$sup" ]; then echo "$p"; return 0; fi
    done
  done
  return 1
}

# hand_over <how the room passes on> <seconds until it does>: SIGKILL to the
# leader's hold; its supervisor contains its worker's whole tree and exits;
# the other agent leads, and its worker starts only after that tree is proven
# gone, which the timestamps show.
hand_over() {
  local hold_pid sup daemon code started finished=""
  hold_pid=$(hold_of "$leader") || die "cannot find $leader's hold process"
  sup=$(cat "$work/$leader.pid")
  daemon=$(cat "$work/$leader.daemon.pid")
  say "SIGKILL to $leader's hold (pid $hold_pid): $1"
  kill -KILL "$hold_pid"

  wait "$sup"
  code=$?
  say "$leader's supervisor exited $code (70: its hold died without a terminal event, so it printed no terminal line)"
  [ -e "/proc/$daemon" ] && die "$leader's daemonized grandchild (pid $daemon) is STILL RUNNING"
  say "$leader's worker tree, daemonized grandchild $daemon included, is gone"

  wait_for "$work/$other.out" '"event":"leader"' "$2" || die "$other never became leader"
  wait_for "$work/$other.worker-started" . 5 || die "$other's worker never started"
  started=$(cat "$work/$other.worker-started")
  sleep 1.2
  [ -e "$work/$other.saw-alive" ] && die "$other's worker started while these were still running: $(tr '\n' ' ' < "$work/$other.saw-alive")"
  if [ -e "$work/$leader.worker-finished" ]; then
    finished=$(cat "$work/$leader.worker-finished")
    say "$leader's worker finished its clean-up at $(stamp "$finished")"
  fi
  say "$other's worker started at                 $(stamp "$started"), and found (in /proc) $leader's worker and daemon gone"
  if [ -z "$finished" ] || [ "$finished" -lt "$started" ]; then
    say "containment came first${finished:+, by $(((started - finished) / 1000000)) ms}"
  else
    die "$other's worker started BEFORE $leader's worker finished"
  fi
}

stamp() { date -d "@${1:0:10}.${1:10:3}" +%H:%M:%S.%3N; }

# stop_other: SIGTERM to the remaining agent, which contains, then releases.
stop_other() {
  local osup odaemon code
  osup=$(cat "$work/$other.pid")
  say "stopping $other with SIGTERM"
  kill -TERM "$osup"
  wait "$osup"
  code=$?
  say "$other's supervisor exited $code (143: stopped by SIGTERM after containment and release)"
  odaemon=$(cat "$work/$other.daemon.pid")
  [ -e "/proc/$odaemon" ] && die "$other's daemonized grandchild (pid $odaemon) is STILL RUNNING"
  pids=()
}
