# Attacks on the cgroups of tester's supervisors by a worker of tester,
# sourced by run.sh (ATTACKS and ATTACK_MODES there say what each proves).
# Every supervisor of a scenario runs as tester in its login session (su -l),
# so all of them share the scope tester's user manager delegated to
# supervisors, SCOPE = user@1000.service/app.slice/octostore-supervisor.scope:
# each in SCOPE/supervisor, each run in SCOPE/run-*/{hold,worker}.
#
# A scenario (attack_scenario MODE FLAGS ATTACK):
#   - victims (all but lift-limits): election L leads room-v (its worker
#     beats a heartbeat every 100 ms, attack-victim.sh), S waits in room-v;
#   - the attacker: election A in room-a with the mode's FLAGS, its worker
#     attack-worker.sh ATTACK, which writes what it tried to attack.log;
#   - judged from outside, as root, once the attacker is done:
#       the attack's writes: all refused (Permission denied; its clone3
#       into another cgroup: Function not implemented);
#       what it would have done: nothing of it happened (no cgroup of its
#       making in SCOPE, every supervisor alive, nothing frozen, the limits
#       as given, the attacker's and L's worker processes each in its run's
#       leaf, L's worker still beating after the next supervisor's start-up
#       sweep);
#       the runs end as they should: L and S released (143) on SIGTERM, S
#       leading in between, with no heartbeat of S before L's last; A
#       released (0) once its worker exits; lift-limits' worker, held to
#       the limits it tried to lift, then goes past --memory-max 64M
#       (worker-oom.sh): A's end is judged as limits-oom-election's (e2e.py
#       limits oom-election: exit 70, released with worker_exit_code 137,
#       limit_hit memory, oom_kills >= 1, signal 9, proven empty, the
#       allocation stopped part way);
#       nothing of the trees left (e2e.py leftovers, no cgroup of the
#       attack's left in SCOPE);
#   - with --no-worker-scope (no defence) the same scenario must see the
#     attack's writes go through and its effect from outside, which proves
#     that the checks above can fail; its leftovers are then cleaned up.
#     There lift-limits' allocation must run to its end unstopped (e2e.py
#     limits alloc-lifted: exit 70, released with worker_exit_code 92, no
#     limit_hit, no OOM kill, 512 MiB allocated), and nothing be left.
declare -A ALPID ASPID ASST
AD=
ATK_DEADLINE=0
ATK_BAD=()
ATK_EFFECT=()

atk_bad() { ATK_BAD+=("$*"); }
atk_note() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*" >>"$AD/timeline"; }
atk_effect() { ATK_EFFECT+=("$*"); }

# atk_wrapper ROLE PROGRAM...: AD/worker.ROLE, which sets the scenario's
# variables (a worker may get a fresh environment) and execs PROGRAM.
atk_wrapper() {
  local role=$1
  shift
  (
    . "$AD/params"
    printf '#!/bin/bash\nexport OCTO_E2E_MARK=%s E2E_DIR=%s E2E_G=%s E2E_TOKEN=%s E2E_REG=%s E2E_ROLE=%s\nexec %s\n' \
      "$MARK" "$AD" "$G" "$TOKEN" "$REG" "$role" "$*" >"$AD/worker.$role"
  )
  chmod 0755 "$AD/worker.$role"
}

atk_cmd() { # ROLE ARGV...: what attack-sup.sh execs for ROLE
  local role=$1
  shift
  printf 'CMD=(%s)\n' "$(printf '%q ' "$@")" >"$AD/$role.cmd"
  chmod 0644 "$AD/$role.cmd"
}

atk_left() { # SECS: SECS, or what is left of the scenario's time if less
  local left=$((ATK_DEADLINE - SECONDS))
  [ "$left" -gt 0 ] || left=0
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}

atk_until() { # SECS CMD...: polls CMD every 100 ms, for at most SECS
  local end=$((SECONDS + $(atk_left "$1")))
  shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.1
  done
}

# atk_start ROLE [svc UNIT]: starts ROLE's supervisor as tester in a login
# session of its own; with svc, as root in a transient system service.
atk_start() {
  local role=$1
  if [ "${2-}" = svc ]; then
    systemd-run --quiet --wait --pipe --collect --service-type=exec --unit="$3" -p Delegate=no -p KillMode=process \
      /bin/bash "$G/attack-sup.sh" "$AD" "$role" >"$AD/$role.stdout" 2>"$AD/$role.stderr" </dev/null &
  else
    su -l tester -c "/bin/bash $G/attack-sup.sh $AD $role" >"$AD/$role.stdout" 2>"$AD/$role.stderr" </dev/null &
  fi
  ALPID[$role]=$!
}

atk_stat() { # PID: "STATE STARTTIME" from /proc/PID/stat
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  set -- $s
  echo "$1 ${20}"
}

atk_pid() { # ROLE: ROLE's supervisor pid and start time, once it wrote them
  [ -s "$AD/$1.pid" ] || return 1
  local p st
  p=$(cat "$AD/$1.pid")
  st=$(atk_stat "$p") || return 1
  ASPID[$1]=$p
  ASST[$1]=${st#* }
}

atk_alive() { # ROLE: whether ROLE's supervisor still runs (same start time, not a zombie)
  local st
  [ -n "${ASPID[$1]-}" ] || atk_pid "$1" || return 1
  st=$(atk_stat "${ASPID[$1]}") || return 1
  [ "${st% *}" != Z ] && [ "${st#* }" = "${ASST[$1]}" ]
}

atk_leads() { grep -q '"event":"leader"' "$AD/$1.stdout" 2>/dev/null && [ -s "$AD/hb.$1" ]; }
atk_joined() { atk_pid "$1" && grep -q '/octostore-supervisor\.scope/supervisor$' "/proc/${ASPID[$1]}/cgroup" 2>/dev/null; }
atk_stderr() { tail -n 3 "$AD/$1.stderr" 2>/dev/null | tr '\n' '|' | cut -c1-400; }

atk_ended() { # ROLE SECS: waits for ROLE's launcher; AD/ROLE.rc
  [ -n "${ALPID[$1]-}" ] || return 1
  if wait_pid "${ALPID[$1]}" "$(atk_left "$2")"; then
    echo "$RC" >"$AD/$1.rc"
    unset "ALPID[$1]"
    return 0
  fi
  return 1
}

# atk_wind_down ROLE WANT_RC WANT: SIGTERMs ROLE's supervisor (unless
# WANT_RC is 0: its worker ends it) and judges its end: exit WANT_RC and a
# terminal line "WANT" (attack.py terminal's first fields).
atk_wind_down() {
  local role=$1 want_rc=$2 want=$3 t
  [ -n "${ASPID[$role]-}" ] || atk_pid "$role" || { atk_bad "$role's supervisor is not running (no pid)"; return 1; }
  [ "$want_rc" = 0 ] || kill -TERM "${ASPID[$role]}" 2>/dev/null
  if ! atk_ended "$role" 20; then
    atk_bad "$role's supervisor did not end within 20s$([ "$want_rc" = 0 ] || echo " of its SIGTERM"); stderr: $(atk_stderr "$role")"
    return 1
  fi
  t=$(python3 "$G/attack.py" terminal "$AD/$role.stdout")
  [ "$(cat "$AD/$role.rc")" = "$want_rc" ] || atk_bad "$role exited $(cat "$AD/$role.rc"), want $want_rc; stderr: $(atk_stderr "$role")"
  [[ "$t" == "$want"* ]] || atk_bad "$role's terminal line is '$t', want '$want'"
}

atk_scopes() { find /sys/fs/cgroup/user.slice -type d -name octostore-supervisor.scope 2>/dev/null; }

# atk_mode ROLE: whether ROLE started as tester in its login session
atk_mode() {
  local m=$AD/$1.mode
  grep -qx uid=1000 "$m" 2>/dev/null && grep -Eqx 'cgroup=/user\.slice/user-1000\.slice/session-[^/]+\.scope' "$m" &&
    grep -qx xdg=/run/user/1000 "$m" || atk_bad "mode setup: $1 did not start as tester in its login session: $(tr '\n' ' ' <"$m" 2>/dev/null)"
}

# atk_outside ATTACK LEAF SCOPE: what the attack did, as root sees it
atk_outside() {
  local attack=$1 leaf=$2 scope=$3 role v f want x n_end
  for x in $(python3 "$G/attack.py" foreign "$scope"); do
    atk_effect "the attack's cgroup $x exists ($(grep -o 'populated [01]' "$x/cgroup.events" 2>/dev/null))"
  done
  while read -r x v; do
    [ "/sys/fs/cgroup$v" = "$leaf" ] || atk_effect "the attacker's process $x is in $v, not its run's leaf"
  done < <(python3 "$G/attack.py" cgroups-of "$AD" A)
  # the leader's worker, where it recorded itself at start (S has none yet)
  if [ -n "$VICTIMS" ]; then
    f=$(cut -d' ' -f3 "$AD/L.worker" 2>/dev/null)
    while read -r x v; do
      [ "$v" = "$f" ] || atk_effect "L's worker process $x is in $v, not its run's leaf $f"
    done < <(python3 "$G/attack.py" cgroups-of "$AD" L)
  fi
  case $attack in
  kill-supervisors)
    # without the defence the kill is under way; give it 10 s to show
    [ -z "$NODEF" ] || atk_until 10 atk_none_alive L S A
    for role in $ROLES; do
      atk_alive "$role" || atk_effect "$role's supervisor (pid ${ASPID[$role]-?}) is gone; its stdout ends: $(python3 "$G/attack.py" terminal "$AD/$role.stdout")"
    done
    ;;
  freeze)
    for f in "$scope/supervisor/cgroup.freeze" "${leaf%/*}/hold/cgroup.freeze"; do
      v=$(cat "$f" 2>&1)
      [ "$v" = 0 ] || atk_effect "$f reads $v"
    done
    ;;
  lift-limits)
    for want in memory.max:67108864 pids.max:32 "cpu.max:50000 100000"; do
      v=$(cat "$leaf/${want%%:*}" 2>&1)
      [ "$v" = "${want#*:}" ] || atk_effect "$leaf/${want%%:*} reads '$v', want '${want#*:}' (as given)"
    done
    ;;
  sweep-victim)
    # the next supervisor of the user: its start-up sweep kills what is in
    # a run whose owners are dead (unless it can tell the attacker's from
    # a supervisor's)
    atk_start N
    if ! atk_ended N 30; then
      atk_bad "the next run (N) did not end within 30s; stderr: $(atk_stderr N)"
      return
    fi
    n_end=$(cut -d' ' -f1 /proc/uptime)
    v=$(python3 "$G/attack.py" terminal "$AD/N.stdout")
    [ "$(cat "$AD/N.rc")" = 0 ] && [[ $v == "run true 0"* ]] || atk_bad "the next run (N) exited $(cat "$AD/N.rc") with '$v', want 0 and 'run true 0'; stderr: $(atk_stderr N)"
    v=$(python3 "$G/attack.py" hb-after "$AD/hb.L" "$n_end" "$(atk_left 5)")
    [ "${v%% *}" = PASS ] || atk_effect "L's worker after the next run's start-up sweep: ${v#FAIL: }"
    atk_alive L || atk_effect "L's supervisor is gone after the next run's start-up sweep; its stdout ends: $(python3 "$G/attack.py" terminal "$AD/L.stdout")"
    ;;
  esac
}

# atk_nothing_left SCOPE: nothing of the scenario's trees left (e2e.py
# leftovers), no cgroup of the attack's left in SCOPE
atk_nothing_left() {
  local e
  e=$(python3 "$G/e2e.py" leftovers "$AD")
  [ "$e" = PASS ] || atk_bad "left: ${e#FAIL: }"
  e=$(python3 "$G/attack.py" foreign "$1" | tr '\n' ' ')
  [ -z "$e" ] || atk_bad "cgroups of the attack left in the scope: $e"
}

# atk_alloc_end KIND: lets lift-limits' attacker go on past its memory
# limit (worker-oom.sh: a setsid daemon, then 512 MiB) and judges A's end,
# which its worker's end brings (no SIGTERM), as e2e.py limits judges KIND
# (without the defence the whole 512 MiB took 22 s under TCG).
atk_alloc_end() {
  local v
  atk_note the attacker may allocate
  touch "$AD/attacker.go"
  if ! atk_ended A 60; then
    atk_bad "A's supervisor did not end within 60s of its worker's allocation; stderr: $(atk_stderr A)"
    return 1
  fi
  atk_note A ended
  v=$(python3 "$G/e2e.py" limits "$AD" "$1" "$(cat "$AD/A.rc")" A)
  [ "$v" = PASS ] || atk_bad "A's end, judged as $1: ${v#FAIL: }; its terminal line: $(python3 "$G/attack.py" terminal "$AD/A.stdout")"
}

atk_none_alive() {
  local r
  for r in "$@"; do
    [[ " $ROLES " == *" $r "* ]] || continue
    ! atk_alive "$r" || return 1
  done
}

atk_phases() { # ATTACK: runs the scenario up to its outside judgement
  local attack=$1 role leaf scope log=$AD/attack.log ok refused perm
  if [ -n "$VICTIMS" ]; then
    atk_note start L
    atk_start L
    atk_until 40 atk_leads L || { atk_bad "L did not lead within 40s (no leader line and heartbeat); stderr: $(atk_stderr L)"; return; }
    atk_pid L
    atk_note L leads, start S
    atk_start S
    atk_until 20 atk_joined S || { atk_bad "S's supervisor did not join the shared scope within 20s; stderr: $(atk_stderr S)"; return; }
  fi
  atk_note start A
  atk_start A
  atk_until 20 atk_pid A || { atk_bad "A's supervisor did not start within 20s; stderr: $(atk_stderr A)"; return; }
  atk_until 40 test -e "$AD/attack.done" || { atk_bad "the attacker did not start and finish within 40s; A's stderr: $(atk_stderr A)"; return; }
  atk_note the attack is done
  for role in $ROLES; do atk_mode "$role"; done
  leaf=$(sed -n 's/^leaf //p' "$log")
  scope=${leaf%/*/*}
  if ! [[ $leaf =~ ^/sys/fs/cgroup/user\.slice/user-1000\.slice/user@1000\.service/.+/octostore-supervisor\.scope/run-[0-9]+\.[0-9]+-[0-9]+\.[0-9]+/worker$ ]]; then
    atk_bad "mode setup: the attacker ran in '$leaf', not in a run of tester's shared scope"
    return
  fi
  echo "$scope" >"$AD/scope"
  ok=$(grep -c '^ok ' "$log")
  refused=$(grep -c '^refused ' "$log")
  # a write or mkdir is refused by the file rules, clone3 by the filter
  perm=$(grep -Ec '^refused .*: Permission denied$|^refused clone-into .*: Function not implemented$' "$log")
  atk_outside "$attack" "$leaf" "$scope"
  atk_note judged from outside
  if [ -n "$NODEF" ]; then
    [ "$ok" -gt 0 ] && [ "$refused" = 0 ] ||
      atk_bad "without the defence the attack's writes should go through: $ok went through, $refused were refused: $(grep '^refused ' "$log" | head -n 3 | tr '\n' '|')"
    [ ${#ATK_EFFECT[@]} -gt 0 ] ||
      atk_bad "without the defence the attack's writes went through, yet nothing of it was seen from outside: this scenario could not fail"
    # the limits lifted, no memory limit ends the worker
    if [ "$attack" = lift-limits ]; then
      atk_alloc_end alloc-lifted && atk_nothing_left "$scope"
    fi
    return
  fi
  [ "$ok" = 0 ] || atk_bad "$ok of the attack's writes went through: $(grep '^ok ' "$log" | head -n 4 | tr '\n' '|')"
  [ $((ok + refused)) -gt 0 ] || atk_bad "the attacker attempted no write"
  [ "$perm" = "$refused" ] || atk_bad "$((refused - perm)) were refused for another reason than Permission denied (clone3: Function not implemented): $(grep '^refused ' "$log" | grep -Ev ': Permission denied$|^refused clone-into .*: Function not implemented$' | head -n 3 | tr '\n' '|')"
  local e
  for e in "${ATK_EFFECT[@]}"; do atk_bad "$e"; done
  [ ${#ATK_EFFECT[@]} = 0 ] || return

  # the runs end as they should, and nothing is left
  if [ -n "$VICTIMS" ]; then
    atk_note SIGTERM to L
    atk_wind_down L 143 "released true" || return
    atk_note L ended
    atk_until 20 atk_leads S || { atk_bad "S did not lead within 20s of L's release; stderr: $(atk_stderr S)"; return; }
    atk_note S leads, SIGTERM to S
    atk_wind_down S 143 "released true" || return
    atk_note S ended
    e=$(python3 "$G/attack.py" hb-order "$AD/hb.L" "$AD/hb.S")
    [ "${e%% *}" = PASS ] || atk_bad "a second worker of room-v while the first lived: ${e#FAIL: }"
  fi
  if [ "$attack" = lift-limits ]; then
    # held to the limits it tried to lift: the memory limit ends it
    atk_alloc_end oom-election || return
  else
    atk_note the attacker may exit
    touch "$AD/attacker.go"
    atk_wind_down A 0 "released true 0" || return
    atk_note A ended
  fi
  atk_nothing_left "$scope"
}

# atk_cleanup: ends whatever the scenario left (thawed first) and removes
# every cgroup left below tester's scope (no supervisor of tester runs
# between scenarios: what a defended scenario left was judged before);
# ATK_CLEANUP says what could not be cleaned.
atk_cleanup() {
  local s x role
  for s in $(atk_scopes); do python3 "$G/attack.py" thaw "$s" 2>>"$AD/cleanup.err"; done
  python3 "$G/e2e.py" kill "$AD" 2>>"$AD/cleanup.err"
  for role in "${!ALPID[@]}"; do
    wait_pid "${ALPID[$role]}" 5 || { kill -KILL "${ALPID[$role]}" 2>/dev/null; wait "${ALPID[$role]}" 2>/dev/null; }
  done
  ALPID=()
  for s in $(atk_scopes); do
    find "$s" -mindepth 1 -depth -type d -exec rmdir {} \; 2>>"$AD/cleanup.err"
  done
  x=$(python3 "$G/e2e.py" leftovers "$AD")
  ATK_CLEANUP=
  [ "$x" = PASS ] || ATK_CLEANUP="cleanup: ${x#FAIL: }"
}

atk_log() { # NAME VERDICT
  local f="$R/logs/${1//\//--}.log" role
  {
    echo "== $1: $2"
    echo "== params"; cat "$AD/params"
    echo "== SCOPE: $(cat "$AD/scope" 2>/dev/null)"
    echo "== timeline (uptime)"; cat "$AD/timeline" 2>/dev/null
    echo "== attack.log (what the attacker tried, as it saw it)"; cat "$AD/attack.log" 2>/dev/null
    echo "== seen from outside"; printf '%s\n' "${ATK_EFFECT[@]}"
    for role in L S A N R K; do
      [ -e "$AD/$role.cmd" ] && [ -e "$AD/$role.mode" ] || continue
      echo "== $role: $(cat "$AD/$role.cmd")"
      echo "-- mode: $(tr '\n' ' ' <"$AD/$role.mode")"
      echo "-- exit code: $(cat "$AD/$role.rc" 2>/dev/null)"
      [ ! -e "$AD/hb.$role" ] || echo "-- heartbeats: $(wc -l <"$AD/hb.$role"), $(head -n 1 "$AD/hb.$role") .. $(tail -n 1 "$AD/hb.$role")"
      [ ! -e "$AD/$role.worker" ] || echo "-- worker: $(cat "$AD/$role.worker")"
      echo "-- stdout"; tail -n 8 "$AD/$role.stdout" 2>/dev/null
      echo "-- stderr"; tail -n 30 "$AD/$role.stderr" 2>/dev/null
    done
    local x
    for x in registered alloc.mib; do
      [ ! -s "$AD/$x" ] || { echo "== $x"; head -n 40 "$AD/$x"; }
    done
    [ ! -s "$AD/cleanup.err" ] || { echo "== cleanup.err"; cat "$AD/cleanup.err"; }
    [ "$2" = PASS ] || { echo "== processes at the end"; cat "$AD/ps.txt"; }
  } >"$f" 2>&1
}

attack_scenario() { # MODE FLAGS ATTACK
  local mode=$1 flags=${2//,/ } attack=$3
  local name=$mode/attack-$3 tok verdict limits=
  NODEF=
  [[ $flags != *--no-worker-scope* ]] || NODEF=1
  VICTIMS=1
  ROLES="L S A"
  [ "$attack" != lift-limits ] || { VICTIMS= ROLES=A limits="--memory-max 64M --max-processes 32 --cpu-max 0.5"; }
  AD=$(new_dir "${name//\//--}")
  ALPID=() ASPID=() ASST=() ATK_BAD=() ATK_EFFECT=()
  # up to five supervisors one after another: twice a scenario's time for
  # all of them (atk_out_of_time keeps it within the VM's)
  ATK_DEADLINE=$((SECONDS + 2 * SCENARIO_TIMEOUT))
  tok=$(token)
  cat >"$AD/params" <<EOF
NAME=$name
MODE=$mode
KIND=attack-$attack
PRIVATE_PIDS=$([[ $flags == *--private-pids* ]] && echo 1 || echo 0)
TOKEN=$tok
MARK=octo-e2e-${name//\//--}-$tok
SUP=$SUP
G=$G
EOF
  chmod 0644 "$AD/params"
  find /sys/fs/cgroup -type d >"$AD/cgroups.before"
  atk_wrapper L "$G/attack-victim.sh"
  atk_wrapper S "$G/attack-victim.sh"
  atk_wrapper A "$G/attack-worker.sh $attack"
  atk_cmd L "$SUP" election --server local "room-v-$tok" cand-l "$AD/worker.L"
  atk_cmd S "$SUP" election --server local "room-v-$tok" cand-s "$AD/worker.S"
  # shellcheck disable=SC2086 # the flags are words
  atk_cmd A "$SUP" election --server local $limits $flags "room-a-$tok" cand-a "$AD/worker.A"
  atk_cmd N "$SUP" run --json -- /bin/true
  atk_phases "$attack"
  ps -eo pid,ppid,user,stat,cgroup:90,args --sort=pid 2>&1 | awk '$1 != 2 && $2 != 2' >"$AD/ps.txt"
  atk_note cleanup
  atk_cleanup
  atk_note cleaned up
  [ -z "$ATK_CLEANUP" ] || atk_bad "$ATK_CLEANUP"
  atk_verdict
  atk_log "$name" "$verdict"
  record "$name" "$verdict"
}

# atk_verdict: the caller's verdict from ATK_BAD, tester's scope named SCOPE
atk_verdict() {
  local scope
  if [ ${#ATK_BAD[@]} = 0 ]; then
    verdict=PASS
    return
  fi
  verdict="FAIL: $(printf '%s; ' "${ATK_BAD[@]}")"
  verdict=${verdict%; }
  scope=$(cat "$AD/scope" 2>/dev/null)
  [ -z "$scope" ] || verdict=${verdict//"$scope"/SCOPE}
  [ -z "$scope" ] || verdict=${verdict//"${scope#/sys/fs/cgroup}"/SCOPE}
}

# atk_out_of_time NAME: out_of_time for a scenario that may take twice a
# scenario's time: none starts later than SCENARIO_TIMEOUT before STOP_AT
atk_out_of_time() {
  [ "$(($(uptime_s) + SCENARIO_TIMEOUT))" -ge "$STOP_AT" ] || return 1
  record "$1" "FAIL: not run: the VM was up $(uptime_s)s, too close to STOP_AT (${STOP_AT}s) for an attack scenario to start"
}

attack_scenarios() {
  local m mode flags a n
  for m in "${ATTACK_MODES[@]}"; do
    IFS=: read -r mode flags <<<"$m"
    for a in "${ATTACKS[@]}"; do
      n=$mode/attack-$a
      selected "$n" || continue
      atk_out_of_time "$n" && continue
      attack_scenario "$mode" "$flags" "$a"
    done
  done
}
