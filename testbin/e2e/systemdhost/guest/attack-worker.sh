#!/bin/bash
# The attacking worker of attack-cgroup.sh (through its wrapper, which sets
# E2E_* and E2E_ROLE): a worker of tester, in its run's worker leaf below
# the scope tester's supervisors share (SCOPE/run-*/worker), attacks that
# scope's cgroups as attack-worker.sh ATTACK says, writes every attempt to
# DIR/attack.log, then DIR/attack.done, waits (at most 120 s) for
# DIR/attacker.go and exits 0; lift-limits then execs worker-oom.sh instead
# (a setsid daemon, then e2e.py alloc: 512 MiB, past the 64M it tried to lift).
#
# DIR/attack.log: "leaf PATH" first (where it ran), then one line per step:
#   ok STEP PATH VALUE            the write (or mkdir) went through
#   refused STEP PATH VALUE: ERR  it did not, with the kernel's word
#   note TEXT                     a step that had nothing to act on, or
#                                 a pid that exited before it was moved
# A step whose directory could not be made writes to one that exists
# instead, so that every step still asks the kernel for a write.
#
# Attacks:
#   kill-supervisors  start a child born in SCOPE/supervisor (clone3 with
#                     CLONE_INTO_CGROUP: out of its run, without a write);
#                     mkdir SCOPE/evil-TOKEN and move itself there (out of
#                     its run); mkdir SCOPE/evil-kill-TOKEN, move every pid of
#                     SCOPE/supervisor there and write 1 to its cgroup.kill:
#                     every supervisor of the user dies, with no terminal line
#   freeze            1 to SCOPE/supervisor/cgroup.freeze and to its run's
#                     hold/cgroup.freeze
#   lift-limits       max to its own leaf's memory.max, pids.max and cpu.max;
#                     once let go, past the memory limit (worker-oom.sh)
#   sweep-victim      mkdir SCOPE/run-999999.1-999998.1/worker (a run whose
#                     owners are dead) and move every other run's worker
#                     there, out of its run, for the next supervisor's
#                     start-up sweep to kill
# Under --private-pids the pids of other cgroups read as 0 here and are
# skipped (noted); the steps that need none still run.
set -u
attack=$1
log=$E2E_DIR/attack.log
leaf=/sys/fs/cgroup$(cut -d: -f3- /proc/self/cgroup)
run=${leaf%/*}
scope=${run%/*}
echo "leaf $leaf" >"$log"

# wr STEP FILE VALUE: one write of VALUE to FILE, by this shell itself (0
# written to a cgroup.procs moves the writer). A pid that exited before it
# could be moved (the victim's sleep) is noted, not counted.
wr() {
  local err
  if { printf '%s\n' "$3" >"$2"; } 2>"$E2E_DIR/attack.err"; then
    echo "ok $1 $2 $3" >>"$log"
  else
    err=$(tail -n 1 "$E2E_DIR/attack.err")
    case $err in
    *"No such process") echo "note $1 $2 $3: ${err##*: } (gone before it could be moved)" >>"$log" ;;
    *) echo "refused $1 $2 $3: ${err##*: }" >>"$log" ;;
    esac
  fi
}
# mk STEP DIR: mkdir; true if made
mk() {
  local err
  if err=$(mkdir "$2" 2>&1); then
    echo "ok $1 $2 mkdir" >>"$log"
  else
    echo "refused $1 $2 mkdir: ${err##*: }" >>"$log"
    return 1
  fi
}
# born STEP DIR: a child born in the cgroup DIR (clone3 CLONE_INTO_CGROUP)
born() {
  local r
  r=$(python3 "$E2E_G/attack.py" clone-into "$2" "$E2E_TOKEN" 2>&1 | tail -n 1)
  case $r in
  ok*) echo "ok $1 $2 clone3" ;;
  refused*) echo "refused $1 $2 clone3: ${r#refused }" ;;
  *) echo "note $1 $2 clone3 failed to run: $r" ;;
  esac >>"$log"
}
# visible FILE: the pids FILE (a cgroup.procs) lists that this PID namespace
# can name
visible() { grep -vx 0 "$1" 2>/dev/null; }

case $attack in
kill-supervisors)
  born clone-into "$scope/supervisor"
  out=$scope/supervisor
  ! mk escape-mkdir "$scope/evil-$E2E_TOKEN" || out=$scope/evil-$E2E_TOKEN
  wr leave-run "$out/cgroup.procs" 0
  # where the supervisors cannot be moved (no cgroup of its own, or no pid
  # of theirs visible here), their own cgroup.kill does the same
  kill=$scope/supervisor
  pids=$(visible "$scope/supervisor/cgroup.procs")
  [ -n "$pids" ] || echo "note no pid of $scope/supervisor is visible here" >>"$log"
  if mk kill-mkdir "$scope/evil-kill-$E2E_TOKEN" && [ -n "$pids" ]; then
    kill=$scope/evil-kill-$E2E_TOKEN
    for p in $pids; do wr move-supervisor "$kill/cgroup.procs" "$p"; done
  fi
  wr kill "$kill/cgroup.kill" 1
  ;;
freeze)
  wr freeze-supervisors "$scope/supervisor/cgroup.freeze" 1
  wr freeze-hold "$run/hold/cgroup.freeze" 1
  ;;
lift-limits)
  wr lift-memory "$leaf/memory.max" max
  wr lift-pids "$leaf/pids.max" max
  wr lift-cpu "$leaf/cpu.max" max
  ;;
sweep-victim)
  fake=$scope/run-999999.1-999998.1
  into=$leaf
  if mk fake-run-mkdir "$fake" && mk fake-worker-mkdir "$fake/worker"; then
    into=$fake/worker
  fi
  n=0
  for w in "$scope"/run-*/worker; do
    [ "$w" != "$leaf" ] && [ "$w" != "$fake/worker" ] || continue
    for p in $(visible "$w/cgroup.procs"); do
      wr move-victim "$into/cgroup.procs" "$p"
      n=$((n + 1))
    done
  done
  [ $n -gt 0 ] || echo "note no pid of another run's worker is visible here" >>"$log"
  ;;
*)
  echo "note unknown attack $attack" >>"$log"
  ;;
esac
echo "after $(cut -d: -f3- /proc/self/cgroup)" >>"$log"
touch "$E2E_DIR/attack.done"
for _ in $(seq 1200); do
  if [ -e "$E2E_DIR/attacker.go" ]; then
    [ "$attack" != lift-limits ] || exec /bin/bash "$E2E_G/worker-oom.sh"
    exit 0
  fi
  sleep 0.1
done
exit 93
