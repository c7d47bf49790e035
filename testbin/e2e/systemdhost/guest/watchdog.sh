# Sourced by run.sh once its scenarios start: a background watchdog that, if
# run.sh still runs at uptime WATCHDOG_AT (shortly before the harness kills
# the VM), writes what every process is doing (state, kernel wait channel,
# cgroup) to RESULTS/watchdog.txt, a summary to the console, and syncs, so a
# hung scenario's "no result" says where it hung.
WATCHDOG_AT=${WATCHDOG_AT:-$((STOP_AT + SCENARIO_TIMEOUT + 20))}
watchdog() {
  local runner=$1 current
  while [ "$(uptime_s)" -lt "$WATCHDOG_AT" ]; do
    kill -0 "$runner" 2>/dev/null || return 0
    sleep 2
  done
  current=$(ls -td /tmp/octo-e2e/*/ 2>/dev/null | head -n 1)
  {
    echo "== run.sh still runs at uptime $(uptime_s)s; the newest scenario directory is $current"
    ps -eo pid,ppid,user,stat,wchan:32,cgroup:70,args --sort=pid
    echo "== systemctl list-jobs"
    timeout 5 systemctl list-jobs --no-pager
  } >"$R/watchdog.txt" 2>&1
  sync
  say "watchdog: run.sh still runs at uptime $(uptime_s)s, in ${current:-?}; processes in results/watchdog.txt"
  awk 'NR > 2 && $4 ~ /^D/' "$R/watchdog.txt" | cut -c1-200 | while read -r line; do say "watchdog: in D state: $line"; done
}
watchdog $$ &
