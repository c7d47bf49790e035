# The unit example (docs/systemd/octostore-election.service), sourced by
# run.sh: installed as shipped, with a drop-in that only adds the scenario's
# marker environment, and the election worker at the path the unit names.
#   unit/start-leads               systemctl start: the worker runs, leader on stdout
#   unit/stop-released             systemctl stop: stdout ends with released, proven
#                                  empty; nothing of the tree is left
#   unit/kill-main-leaves-nothing  systemctl kill -s KILL --kill-whom=main: every
#                                  process of the tree ends
#   unit/doctor-pre-keeps-cgroup   with `doctor` as ExecStartPre= (systemd runs it
#                                  in the unit's .control cgroup), the supervisor
#                                  that follows still contains by cgroup
unit_step() { # NAME VERDICT: records one step, with the unit's state in its log
  local f="$R/logs/${1//\//--}.log"
  {
    echo "== $1: $2"
    echo "== events file ($EVFILE)"
    tail -n 20 "$EVFILE" 2>/dev/null
    echo "== systemctl status"
    timeout 10 systemctl status --no-pager -l "$UNIT" 2>&1 | tail -n 30
    echo "== journal"
    timeout 10 journalctl -b --no-pager -u "$UNIT" 2>&1 | tail -n 60
    echo "== octostore-supervisor doctor, in a transient service with the unit's Delegate= and KillMode="
    cat "$UDIR/doctor.txt" 2>/dev/null
    for x in registered exits snapshot cleanup.err; do
      [ -s "$UDIR/$x" ] && { echo "== $x"; head -n 40 "$UDIR/$x"; }
    done
  } >"$f" 2>&1
  record "$1" "$2"
}

unit_wait_lead() { # SECONDS: the worker started and the supervisor printed leader
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ] && [ ! -e "$UDIR/worker-started" ]; do sleep 0.1; done
  while [ $SECONDS -lt $end ] && ! tail -n 1 "$EVFILE" 2>/dev/null | grep -q '"event":"leader"'; do sleep 0.1; done
  [ -e "$UDIR/worker-started" ] && tail -n 1 "$EVFILE" 2>/dev/null | grep -q '"event":"leader"'
}

# unit_released FIRSTLINE: why the events file's lines from FIRSTLINE on do
# not end with a released line proven empty (nothing when they do).
unit_released() {
  tail -n +"$1" "$EVFILE" 2>/dev/null | python3 -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
try:
    last = json.loads(lines[-1])
except (IndexError, ValueError):
    print("stdout printed no JSON line at the stop" + (": " + lines[-1][:200] if lines else ""))
    sys.exit()
c = last.get("containment") or {}
if last.get("event") != "released":
    print("the last line is %r, want released" % last.get("event"))
elif c.get("proven_empty") is not True:
    print("released without containment.proven_empty=true: %r" % c)
elif c.get("backend") != "cgroup":
    print("containment backend %r in a Delegate=yes unit, want cgroup" % c.get("backend"))
'
}

unit_install() {
  local tok=$1
  printf 'NAME=unit\nTOKEN=%s\nMARK=octo-e2e-unit-%s\nPRIVATE_PIDS=0\nG=%s\n' "$tok" "$tok" "$G" >"$UDIR/params"
  install -m 0644 "$P/systemd/$UNIT" "/etc/systemd/system/$UNIT"
  worker_wrapper "$UDIR" "$G/worker-election.sh"
  install -D -m 0755 "$UDIR/worker" /usr/local/libexec/octostore-election/worker
  mkdir -p "/etc/systemd/system/$UNIT.d"
  # The drop-in adds the marker to the supervisor's side and, once it has
  # exited, records how (systemd unloads an inactive unit, and with it
  # ExecMainStatus). Nothing else runs in the unit while the supervisor does.
  printf '[Service]\nEnvironment=OCTO_E2E_MARK=octo-e2e-unit-%s\nExecStopPost=/bin/sh -c "echo $$EXIT_CODE $$EXIT_STATUS >>%s/exits"\n' \
    "$tok" "$UDIR" >"/etc/systemd/system/$UNIT.d/e2e.conf"
  EVFILE=$(sed -n 's/^StandardOutput=append://p' "/etc/systemd/system/$UNIT")
  timeout 30 systemctl daemon-reload
  # doctor's view from a unit like it (a transient service with the unit's
  # Delegate= and KillMode=), not from the unit itself, which must hold
  # nothing but the supervisor
  timeout 40 systemd-run --quiet --wait --pipe --collect --service-type=exec -p RuntimeMaxSec=30 \
    -p Delegate="$(timeout 10 systemctl show -P Delegate "$UNIT")" -p KillMode="$(timeout 10 systemctl show -P KillMode "$UNIT")" \
    "$SUP" doctor >"$UDIR/doctor.txt" 2>&1 </dev/null
  echo "(doctor exited $?)" >>"$UDIR/doctor.txt"
}

unit_scenarios() {
  local any= n
  for n in "${UNIT_STEPS[@]}"; do selected "$n" && any=1; done
  [ -n "$any" ] || return 0
  if [ "$(uptime_s)" -ge "$STOP_AT" ]; then
    for n in "${UNIT_STEPS[@]}"; do out_of_time "$n"; done
    return 0
  fi
  UNIT=octostore-election.service
  UDIR=$(new_dir unit)
  unit_install "$(token)"
  find /sys/fs/cgroup -type d >"$UDIR/cgroups.before"
  if [ -z "$EVFILE" ]; then
    for n in "${UNIT_STEPS[@]}"; do
      unit_step "$n" "FAIL: the unit has no StandardOutput=append:FILE to read its stdout from"
    done
    return 0
  fi
  unit_start_stop
  unit_kill_main
  unit_doctor_pre
  python3 "$G/e2e.py" kill "$UDIR" 2>>"$UDIR/cleanup.err"
}

unit_start_stop() {
  timeout 30 systemctl start "$UNIT"
  if unit_wait_lead 30; then
    unit_step unit/start-leads PASS
  else
    unit_step unit/start-leads "FAIL: no worker and leader line within 30s (unit $(timeout 10 systemctl is-active "$UNIT")); last stdout line: $(tail -n 1 "$EVFILE" 2>/dev/null | cut -c1-300)"
  fi

  unit_step unit/stop-released "$(unit_stop)"
}

# unit_stop: stops the unit and says PASS, or FAIL with why: its stdout must
# end with released proven empty, the supervisor with 143 (SIGTERM after
# containment), and nothing of the tree may be left.
unit_stop() {
  local v st left lines
  lines=$(wc -l <"$EVFILE" 2>/dev/null || echo 0)
  timeout 30 systemctl stop "$UNIT"
  v=$(unit_released "$((lines + 1))")
  st=$(tail -n 1 "$UDIR/exits" 2>/dev/null)
  [ "$st" = "exited 143" ] || v="${v:+$v; }the supervisor ended ${st:-(not recorded)}, want exited 143 (SIGTERM after containment)"
  left=$(python3 "$G/e2e.py" leftovers "$UDIR")
  [ "$left" = PASS ] || v="${v:+$v; }${left#FAIL: }"
  [ -z "$v" ] && echo PASS || echo "FAIL: $v"
}

unit_kill_main() {
  local v left
  python3 "$G/e2e.py" kill "$UDIR" 2>>"$UDIR/cleanup.err"
  rm -f "$UDIR/worker-started" "$UDIR/daemon.registered" "$UDIR/worker.registered"
  timeout 30 systemctl start "$UNIT"
  if ! unit_wait_lead 30; then
    unit_step unit/kill-main-leaves-nothing "FAIL: the unit did not lead within 30s, nothing to kill (unit $(timeout 10 systemctl is-active "$UNIT"))"
    timeout 30 systemctl stop "$UNIT"
    return
  fi
  python3 "$G/e2e.py" snapshot "$UDIR" >"$UDIR/snapshot"
  timeout 30 systemctl kill -s KILL --kill-whom=main "$UNIT"
  v=$(python3 "$G/e2e.py" gone "$UDIR/snapshot" 20)
  timeout 30 systemctl stop "$UNIT" # a restart may be pending, or running
  left=$(python3 "$G/e2e.py" leftovers "$UDIR")
  if [ "$left" != PASS ]; then
    if [ "${v%% *}" = PASS ]; then
      v="FAIL: after systemctl stop: ${left#FAIL: }"
    else
      v="$v; after systemctl stop: ${left#FAIL: }"
    fi
  fi
  [ "${v%% *}" != PASS ] || v=PASS
  unit_step unit/kill-main-leaves-nothing "$v"
}

unit_doctor_pre() {
  local v
  python3 "$G/e2e.py" kill "$UDIR" 2>>"$UDIR/cleanup.err"
  rm -f "$UDIR/worker-started" "$UDIR/daemon.registered" "$UDIR/worker.registered"
  printf '[Service]\nExecStartPre=/usr/local/bin/octostore-supervisor doctor\n' >"/etc/systemd/system/$UNIT.d/pre.conf"
  timeout 30 systemctl daemon-reload
  timeout 60 systemctl start "$UNIT"
  if unit_wait_lead 30; then
    v=$(unit_stop)
  else
    v="FAIL: the unit did not lead within 30s (unit $(timeout 10 systemctl is-active "$UNIT"))"
    timeout 30 systemctl stop "$UNIT"
  fi
  rm -f "/etc/systemd/system/$UNIT.d/pre.conf"
  timeout 30 systemctl daemon-reload
  unit_step unit/doctor-pre-keeps-cgroup "$v"
}
