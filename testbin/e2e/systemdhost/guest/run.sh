#!/bin/bash
# The systemd-host scenarios, run as root inside the VM by the image's
# payload runner: run.sh PAYLOAD RESULTS.
#
# PAYLOAD holds bin/ (the binaries as `make build` builds them), guest/ (these
# scripts), systemd/ (the unit example) and config: STOP_AT (no scenario
# starts once the VM has been up this many seconds; later ones are reported
# as not run), SCENARIO_TIMEOUT (seconds), ONLY (a bash regex of the
# scenario names to run), SET (systemd: the start-up modes, limits and
# attacks below; containers: containers.sh's Podman scenarios).
# RESULTS gets results.txt: a "PLAN NAME" line for every scenario first, then
# one "PASS NAME" or "FAIL NAME: REASONS" line each; and logs/NAME.log (NAME
# with / as --): what the mode gave, doctor's output there, the command, its
# exit code, stdout, stderr and the verdict.
#
# Each scenario runs its command in a start-up mode (launch below), judges it
# from here, as root, once the supervisor has exited: exit code and stdout;
# no process it started still runs (pids registered through a socket, with
# their start times, and any process whose environment has the scenario's
# OCTO_E2E_MARK or whose argv has its token); no run-* cgroup of the
# supervisor left (e2e.py judge). Whatever is left is then SIGKILLed, so one
# failure does not spoil the next scenario.
set -u
P=$1
R=$2
G=$P/guest
SUP=/usr/local/bin/octostore-supervisor
STOP_AT=380
SCENARIO_TIMEOUT=60
ONLY=
SET=systemd
[ ! -r "$P/config" ] || . "$P/config"
mkdir -p "$R/logs" /tmp/octo-e2e/doctor
chmod 0777 /tmp/octo-e2e/doctor
: >"$R/results.txt"

say() { # a short progress line on the console, the whole line in run.out
  echo "octo-e2e: $*" | cut -c1-200 >/dev/ttyS0 2>/dev/null || true
  echo "$*"
}
install -m 0755 "$P/bin/octostore-supervisor" "$P/bin/octostore" /usr/local/bin/

# MODE:LAUNCH:DELEGATE:FLAGS:BOMB_EXPECT
#   LAUNCH  how the command starts (launch below)
#   FLAGS   isolation flags for run and election (commas for spaces)
#   BOMB_EXPECT  cgroup: --max-processes must hold (the cgroup backend, with
#           pids.max); cgroup-or-64: a plain runuser has no session bus, so
#           the process-group fallback (exit 64 for an explicit
#           --max-processes, nothing started) is allowed too.
MODES=(
  "svc:svc:no::cgroup"
  "svc-delegate:svc:yes::cgroup"
  "root-session:root-session:::cgroup"
  "user-session:user-session:::cgroup"
  "user-runuser:user-runuser:::cgroup-or-64"
  "user-scope:user-scope:::cgroup"
  "svc-worker-user:svc:no:--worker-user,nobody:cgroup"
  "svc-private-pids:svc:no:--private-pids:cgroup"
  "user-session-private-pids:user-session::--private-pids:cgroup"
)
KINDS=(run-daemon run-forkbomb election-sigterm)
# MODE:KIND of the resource-limit scenarios, each in a mode of
# MODES: limits asked for below a cgroup that offers no controller exit 64
# naming it and the fix; a worker tree past --memory-max 64M is OOM-killed as
# a whole (run; an election, which then releases and exits 70); a fork bomb
# under --max-processes 32 says limit_hit pids; two CPU hogs under --cpu-max
# 0.25 use at most 0.3 CPU-seconds per second over 5 s by cpu.stat (read from
# outside) and are killed at --timeout.
LIMITS=(svc-delegate:limits-refused svc:limits-oom-run svc:limits-oom-election svc:limits-forkbomb-pids svc:limits-cpu)
UNIT_STEPS=(unit/start-leads unit/stop-released unit/kill-main-leaves-nothing unit/doctor-pre-keeps-cgroup)
# A worker of tester (the supervisor's own user, in the user-session mode:
# every supervisor of tester shares SCOPE, the octostore-supervisor.scope
# its user manager delegated) attacks SCOPE's cgroups (attack-cgroup.sh runs
# them, attack-worker.sh attacks); MODE/attack-ATTACK, each judged from
# outside: the attack's writes refused (Permission denied; clone3:
# Function not implemented), nothing of it happened, the attacked runs print
# their terminal lines, no second worker of a room while the first beats,
# nothing left:
#   kill-supervisors  clone3 a child into SCOPE/supervisor (CLONE_INTO_CGROUP);
#                     mkdir SCOPE/evil and move itself there out of its run;
#                     move every pid of SCOPE/supervisor to a cgroup of its
#                     own and write its cgroup.kill (every supervisor of the
#                     user would die with no terminal line)
#   freeze            write 1 to SCOPE/supervisor/cgroup.freeze and its run's
#                     hold/cgroup.freeze
#   lift-limits       write max to its own leaf's memory.max, pids.max and
#                     cpu.max under --memory-max 64M --max-processes 32
#                     --cpu-max 0.5 (read back from outside), then go past
#                     the memory limit: held to it, the tree is OOM-killed
#                     and A's terminal line names it, as limits-oom-election
#                     judges it (without the defence: nothing stops it)
#   sweep-victim      make SCOPE/run-999999.1-999998.1/worker (a run whose
#                     owners are dead) and move another live run's worker
#                     there, for the next run's start-up sweep to kill (the
#                     victim must stay in its leaf and beat on after it)
ATTACKS=(kill-supervisors freeze lift-limits sweep-victim)
# MODE:FLAGS (the attacker's; commas for spaces). user-session-no-worker-scope
# is the run without the defence: there the attack's writes must go through
# and be seen from outside, so that each scenario is shown able to fail.
ATTACK_MODES=("user-session:" "user-session-private-pids:--private-pids" "user-session-no-worker-scope:--no-worker-scope")
# What a worker of a user with a service manager can ask it for
# (systemd-run --user) no cgroup rule closes; user-manager.sh says what each
# proves: the supervisor's note at start, root's --worker-user refused (64)
# for a lingering user unless --worker-user-manager-ok.
MANAGER_SCENARIOS=(user-session/note-systemd-run svc-worker-user-tester/manager-refused)

selected() { [ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]; }
uptime_s() { cut -d. -f1 /proc/uptime; }
# out_of_time NAME: records NAME as not run once the VM is past STOP_AT.
out_of_time() {
  [ "$(uptime_s)" -ge "$STOP_AT" ] || return 1
  record "$1" "FAIL: not run: the VM was up ${STOP_AT}s (STOP_AT) before it could start"
}

# launch LAUNCH DELEGATE UNIT DIR: runs exec-sup.sh DIR in the start-up mode.
launch() {
  local how=$1 delegate=$2 unit=$3 d=$4
  case $how in
  svc) # a transient system service, root; KillMode=process keeps what the
    # supervisor leaves behind in view instead of letting systemd kill it
    systemd-run --quiet --wait --pipe --collect --service-type=exec --unit="$unit" \
      -p Delegate="$delegate" -p KillMode=process /bin/bash "$G/exec-sup.sh" "$d" ;;
  root-session) # root through PAM: pam_systemd makes a session scope
    runuser -l root -c "/bin/bash $G/exec-sup.sh $d" ;;
  user-session) # tester's login session (XDG_RUNTIME_DIR, the session bus)
    su -l tester -c "/bin/bash $G/exec-sup.sh $d" ;;
  user-runuser) # tester without a session: the runner's cgroup, no bus
    runuser -u tester -- /bin/bash "$G/exec-sup.sh" "$d" ;;
  user-scope) # tester's login, in a scope its user manager delegated to it
    su -l tester -c "systemd-run --user --scope --quiet -p Delegate=yes --unit=$unit /bin/bash $G/exec-sup.sh $d" ;;
  esac
}

new_dir() {
  local d=/tmp/octo-e2e/$1
  rm -rf "$d"
  mkdir -p "$d"
  chmod 0777 "$d"
  echo "$d"
}

token() { echo "$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')$((RANDOM % 10))"; }

# One registrar serves every scenario (e2e.py registrar).
REG=/tmp/octo-e2e/reg.sock
start_registrar() {
  rm -f "$REG" "$REG.ready"
  python3 "$G/e2e.py" registrar "$REG" 2>>"$R/registrar.err" &
  for _ in $(seq 200); do
    [ -e "$REG.ready" ] && return 0
    sleep 0.05
  done
  say "the registrar did not start"
  return 1
}

# worker_wrapper DIR WORKER: the program the supervisor starts. It sets the
# scenario's variables itself, since a --worker-user worker gets a fresh
# environment, and execs WORKER.
worker_wrapper() (
  . "$1/params"
  printf '#!/bin/bash\nexport OCTO_E2E_MARK=%s E2E_DIR=%s E2E_G=%s E2E_TOKEN=%s E2E_REG=%s\nexec %s\n' \
    "$MARK" "$1" "$G" "$TOKEN" "$REG" "$2" >"$1/worker"
  chmod 0755 "$1/worker"
)

# wait_pid PID SECONDS: waits for our child PID; sets RC (empty on timeout).
wait_pid() {
  local pid=$1 end=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    RC=
    return 1
  fi
  wait "$pid"
  RC=$?
}

log_scenario() { # NAME DIR VERDICT
  local name=$1 d=$2 verdict=$3 f
  f="$R/logs/${name//\//--}.log"
  {
    echo "== $name: $verdict"
    echo "== params"; cat "$d/params" 2>/dev/null
    echo "== what the mode gave"; cat "$d/mode.txt" 2>/dev/null
    echo "== octostore-supervisor doctor, in this mode (run once per mode)"; cat "$d/doctor.txt" 2>/dev/null
    echo "== exit code: $(cat "$d/rc" 2>/dev/null)"
    echo "== stdout"; tail -n 50 "$d/stdout" 2>/dev/null
    echo "== stderr (last 80 lines)"; tail -n 80 "$d/stderr" 2>/dev/null
    for x in registered worker.pids monitor.json cpu.json alloc.mib bomb.eagain launch.err cleanup.err; do
      [ -s "$d/$x" ] && { echo "== $x"; head -n 40 "$d/$x"; }
    done
    if [ "$verdict" != PASS ]; then
      echo "== processes when the command had ended (ps)"; cat "$d/ps.txt"
      echo "== files of octostore's open then"; cat "$d/open-files.txt"
    fi
  } >"$f" 2>&1
}

record() { # NAME VERDICT
  if [ "$2" = PASS ]; then
    echo "PASS $1" >>"$R/results.txt"
  else
    echo "FAIL $1: ${2#FAIL: }" >>"$R/results.txt"
  fi
  sync
  say "[$(uptime_s)s] $1: $2"
}

scenario() { # MODE LAUNCH DELEGATE FLAGS BOMB_EXPECT KIND
  local mode=$1 how=$2 delegate=$3 flags=${4//,/ } expect=$5 kind=$6
  local name=$mode/$kind safe d tok unit lpid verdict
  safe=${name//\//--}
  d=$(new_dir "$safe")
  tok=$(token)
  unit=octo-$safe
  local args short
  case $kind in
  run-daemon) short=daemon args="$SUP run $flags -- $d/worker" ;;
  run-forkbomb) short=bomb args="$SUP run --max-processes 32 --timeout 4s $flags -- /usr/bin/python3 $G/e2e.py bomb $d $tok" ;;
  election-sigterm) short=election args="$SUP election --server local $flags room-$tok cand-$safe $d/worker" ;;
  judge-sees-survivors) short=control args="$d/worker" ;; # no supervisor: the daemon must be seen
  limits-oom-run) short=oom-run args="$SUP run --json --memory-max 64M $flags -- $d/worker" ;;
  limits-oom-election) short=oom-election args="$SUP election --server local --memory-max 64M $flags room-$tok cand-$safe $d/worker" ;;
  # the timeout must outlast the hogs' start (two python starts each, at a
  # quarter of an emulated CPU) and then the meter's 6 s; 15 s once did not
  limits-cpu) short=cpu args="$SUP run --json --cpu-max 0.25 --timeout 30s $flags -- $d/worker" ;;
  limits-forkbomb-pids) short=bomb-pids args="$SUP run --json --max-processes 32 --timeout 4s $flags -- /usr/bin/python3 $G/e2e.py bomb $d $tok" ;;
  limits-refused) short=refused args="/bin/bash $G/limits-refused.sh $d" ;;
  esac
  cat >"$d/params" <<EOF
NAME=$name
MODE=$mode
LAUNCH=$how
DELEGATE=$delegate
KIND=$short
BOMB_EXPECT=$expect
PRIVATE_PIDS=$([[ $flags == *--private-pids* ]] && echo 1 || echo 0)
UNIT=$unit
TOKEN=$tok
MARK=octo-e2e-$safe-$tok
SUP=$SUP
G=$G
DOCTOR=$([ $short = control ] || echo "/tmp/octo-e2e/doctor/$mode.txt")
CMD=($args)
EOF
  case $kind in
  run-daemon | judge-sees-survivors) worker_wrapper "$d" "$G/worker-daemon.sh" ;;
  election-sigterm) worker_wrapper "$d" "$G/worker-election.sh" ;;
  limits-oom-*) worker_wrapper "$d" "$G/worker-oom.sh" ;;
  limits-cpu) worker_wrapper "$d" "$G/worker-cpu.sh" ;;
  limits-refused) worker_wrapper "$d" "$G/worker-daemon.sh" ;; # must never start
  esac
  chmod 0644 "$d/params"
  find /sys/fs/cgroup -type d >"$d/cgroups.before"
  local monpid=
  case $kind in
  run-forkbomb | limits-forkbomb-pids | limits-cpu)
    echo "$tok" >"$d/token"
    python3 "$G/e2e.py" "$([ $kind = limits-cpu ] && echo cpumeter || echo monitor)" "$d" 2>>"$d/launch.err" &
    monpid=$!
    ;;
  esac
  launch "$how" "$delegate" "$unit" "$d" >"$d/stdout" 2>"$d/stderr" </dev/null &
  lpid=$!
  # one deadline for the whole scenario; an election keeps 15 s of it for
  # its teardown after the SIGTERM
  local deadline=$((SECONDS + SCENARIO_TIMEOUT))
  if [ "$kind" = election-sigterm ]; then
    while [ $SECONDS -lt $((deadline - 15)) ] && kill -0 $lpid 2>/dev/null && [ ! -e "$d/worker-started" ]; do sleep 0.1; done
    # leader is printed once the worker runs
    while [ $SECONDS -lt $((deadline - 15)) ] && kill -0 $lpid 2>/dev/null && ! grep -q '"event":"leader"' "$d/stdout"; do sleep 0.1; done
    if kill -0 $lpid 2>/dev/null && [ -s "$d/sup.pid" ]; then
      kill -TERM "$(cat "$d/sup.pid")" 2>>"$d/launch.err"
    fi
  fi
  if wait_pid $lpid $((deadline - SECONDS)); then
    echo "$RC" >"$d/rc"
  else
    echo "timed out after ${SCENARIO_TIMEOUT}s" >>"$d/launch.err"
    kill -KILL "$(cat "$d/sup.pid" 2>/dev/null)" 2>/dev/null
    kill -KILL $lpid 2>/dev/null
    wait $lpid 2>/dev/null
  fi
  ps -eo pid,ppid,user,stat,cgroup:80,args --sort=pid >"$d/ps.txt" 2>&1
  find /proc/[0-9]*/fd -lname '*octostore*' -printf '%p -> %l\n' >"$d/open-files.txt" 2>/dev/null
  if [ -n "$monpid" ]; then
    touch "$d/monitor.stop"
    wait $monpid
  fi
  # the control also plants a cgroup named like a run's, which must be seen
  [ "$short" != control ] || mkdir /sys/fs/cgroup/run-1.1-2.2
  verdict=$(python3 "$G/e2e.py" judge "$d" 2>>"$d/cleanup.err" | tail -n 1)
  [ -n "$verdict" ] || verdict="FAIL: the judge printed nothing"
  [ "$short" != control ] || rmdir /sys/fs/cgroup/run-1.1-2.2
  case $how in
  svc) timeout 30 systemctl stop "$unit.service" 2>/dev/null; timeout 10 systemctl reset-failed "$unit.service" 2>/dev/null ;;
  esac
  cp "/tmp/octo-e2e/doctor/$mode.txt" "$d/doctor.txt" 2>/dev/null
  log_scenario "$name" "$d" "$verdict"
  record "$name" "$verdict"
}

if [ "$SET" = containers ]; then
  . "$G/watchdog.sh"
  . "$G/containers.sh"
  say "container scenarios start at uptime $(uptime_s)s; none starts after ${STOP_AT}s"
  container_scenarios
  say "scenarios done at uptime $(uptime_s)s"
  exit 0
fi
selected harness/judge-sees-survivors && echo "PLAN harness/judge-sees-survivors" >>"$R/results.txt"
for n in "${UNIT_STEPS[@]}"; do
  selected "$n" && echo "PLAN $n" >>"$R/results.txt"
done
for m in "${MODES[@]}"; do
  for k in "${KINDS[@]}"; do
    n=${m%%:*}/$k
    selected "$n" && echo "PLAN $n" >>"$R/results.txt"
  done
done
for l in "${LIMITS[@]}"; do
  selected "${l/://}" && echo "PLAN ${l/://}" >>"$R/results.txt"
done
for m in "${ATTACK_MODES[@]}"; do
  for a in "${ATTACKS[@]}"; do
    n=${m%%:*}/attack-$a
    selected "$n" && echo "PLAN $n" >>"$R/results.txt"
  done
done
for n in "${MANAGER_SCENARIOS[@]}"; do
  selected "$n" && echo "PLAN $n" >>"$R/results.txt"
done

start_registrar
REGPID=$!
. "$G/watchdog.sh"
say "scenarios start at uptime $(uptime_s)s; none starts after ${STOP_AT}s"
# The harness's own control: a worker's setsid daemon with no supervisor
# around it must be judged a survivor, and a planted run-* cgroup a leftover,
# or no PASS below means anything.
selected harness/judge-sees-survivors && scenario harness svc no "" "" judge-sees-survivors
. "$G/unit.sh"
unit_scenarios
for m in "${MODES[@]}"; do
  IFS=: read -r mode how delegate flags expect <<<"$m"
  for k in "${KINDS[@]}"; do
    selected "$mode/$k" || continue
    out_of_time "$mode/$k" && continue
    scenario "$mode" "$how" "$delegate" "$flags" "$expect" "$k"
  done
done
for l in "${LIMITS[@]}"; do
  selected "${l/://}" || continue
  out_of_time "${l/://}" && continue
  for m in "${MODES[@]}"; do
    IFS=: read -r mode how delegate flags expect <<<"$m"
    [ "$mode" = "${l%%:*}" ] && scenario "$mode" "$how" "$delegate" "$flags" "$expect" "${l#*:}"
  done
done
. "$G/attack-cgroup.sh"
attack_scenarios
. "$G/user-manager.sh"
manager_scenarios
kill "$REGPID" 2>/dev/null
say "scenarios done at uptime $(uptime_s)s"
