# A worker's way around containment that no cgroup or Landlock rule closes:
# asking its user's service manager (systemd --user, over the pathname unix
# sockets in $XDG_RUNTIME_DIR) to start processes in a unit of its own
# (systemd-run --user), or to kill the supervisors' scope. Sourced by run.sh
# after attack-cgroup.sh, whose helpers it uses; MANAGER_SCENARIOS there says
# what each proves:
#   user-session/note-systemd-run
#       tester's supervisor, in its login session, says at start that its
#       worker can reach its service manager (stderr names systemd-run
#       --user), and the run goes on (exit 0, proven empty)
#   svc-worker-user-tester/manager-refused
#       root's supervisor, in a system service, refuses --worker-user tester
#       while tester has a service manager (it lingers in the image): exit 64
#       naming --worker-user-manager-ok, nothing started; with
#       --worker-user-manager-ok the worker runs as uid 1000 (exit 0, proven
#       empty) and stderr names systemd-run --user

manager_scenario() { # NAME
  local name=$1 tok verdict x
  AD=$(new_dir "${name//\//--}")
  ALPID=() ASPID=() ASST=() ATK_BAD=() ATK_EFFECT=()
  ATK_DEADLINE=$((SECONDS + SCENARIO_TIMEOUT))
  tok=$(token)
  cat >"$AD/params" <<EOF
NAME=$name
MODE=${name%%/*}
KIND=${name#*/}
PRIVATE_PIDS=0
TOKEN=$tok
MARK=octo-e2e-${name//\//--}-$tok
SUP=$SUP
G=$G
EOF
  chmod 0644 "$AD/params"
  find /sys/fs/cgroup -type d >"$AD/cgroups.before"
  case $name in
  user-session/note-systemd-run)
    atk_wrapper N "$G/attack-victim.sh once"
    atk_cmd N "$SUP" run --json -- "$AD/worker.N"
    atk_start N
    if atk_ended N 30; then
      atk_mode N
      manager_ran N 0 1000
      grep -q 'systemd-run --user' "$AD/N.stderr" ||
        atk_bad "no note naming systemd-run --user on stderr: $(atk_stderr N)"
    else
      atk_bad "N did not end within 30s; stderr: $(atk_stderr N)"
    fi
    ;;
  svc-worker-user-tester/manager-refused)
    atk_wrapper R "$G/attack-victim.sh once"
    atk_wrapper K "$G/attack-victim.sh once"
    atk_cmd R "$SUP" run --json --worker-user tester -- "$AD/worker.R"
    atk_cmd K "$SUP" run --json --worker-user tester --worker-user-manager-ok -- "$AD/worker.K"
    atk_start R svc "octo-${name//\//--}-r"
    if atk_ended R 30; then
      [ "$(cat "$AD/R.rc")" = 64 ] || atk_bad "--worker-user tester (lingering) exited $(cat "$AD/R.rc"), want 64; stderr: $(atk_stderr R)"
      [ ! -e "$AD/R.worker" ] || atk_bad "--worker-user tester (lingering): the worker ran: $(cat "$AD/R.worker")"
      [ ! -s "$AD/R.stdout" ] || atk_bad "--worker-user tester (lingering): stdout has lines: $(head -c 300 "$AD/R.stdout")"
      grep -q -- '--worker-user-manager-ok' "$AD/R.stderr" ||
        atk_bad "--worker-user tester (lingering): stderr does not name --worker-user-manager-ok: $(atk_stderr R)"
    else
      atk_bad "R did not end within 30s; stderr: $(atk_stderr R)"
    fi
    atk_start K svc "octo-${name//\//--}-k"
    if atk_ended K 30; then
      manager_ran K 0 1000
      grep -q 'systemd-run --user' "$AD/K.stderr" ||
        atk_bad "--worker-user-manager-ok: no note naming systemd-run --user on stderr: $(atk_stderr K)"
    else
      atk_bad "K did not end within 30s; stderr: $(atk_stderr K)"
    fi
    for x in R K; do grep -qx uid=0 "$AD/$x.mode" 2>/dev/null || atk_bad "mode setup: $x did not run as root"; done
    ;;
  esac
  x=$(python3 "$G/e2e.py" leftovers "$AD")
  [ "$x" = PASS ] || atk_bad "left: ${x#FAIL: }"
  ps -eo pid,ppid,user,stat,cgroup:90,args --sort=pid 2>&1 | awk '$1 != 2 && $2 != 2' >"$AD/ps.txt"
  atk_cleanup
  for x in r k; do
    timeout 30 systemctl stop "octo-${name//\//--}-$x.service" 2>/dev/null
    timeout 10 systemctl reset-failed "octo-${name//\//--}-$x.service" 2>/dev/null
  done
  atk_verdict
  atk_log "$name" "$verdict"
  record "$name" "$verdict"
}

manager_ran() { # ROLE RC UID: ROLE's run exited RC, proven empty, its worker ran as UID
  local t
  t=$(python3 "$G/attack.py" terminal "$AD/$1.stdout")
  [ "$(cat "$AD/$1.rc")" = "$2" ] || atk_bad "$1 exited $(cat "$AD/$1.rc"), want $2; stderr: $(atk_stderr "$1")"
  [[ $t == "run true $2"* ]] || atk_bad "$1's terminal line is '$t', want 'run true $2'"
  [ "$(cut -d' ' -f2 "$AD/$1.worker" 2>/dev/null)" = "$3" ] || atk_bad "$1's worker did not run as uid $3 ($(cat "$AD/$1.worker" 2>/dev/null || echo 'it did not run'))"
}

manager_scenarios() {
  local n
  for n in "${MANAGER_SCENARIOS[@]}"; do
    selected "$n" || continue
    out_of_time "$n" && continue
    manager_scenario "$n"
  done
}
