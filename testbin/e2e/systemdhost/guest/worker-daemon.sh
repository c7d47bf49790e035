#!/bin/bash
# run's worker (through the scenario's wrapper, which sets E2E_*): starts a
# setsid daemon, registered with its pid, waits until it runs, and exits 7;
# run must return 7 with the daemon gone.
set -u
echo $$ >>"$E2E_DIR/worker.pids"
setsid python3 "$E2E_G/e2e.py" register "$E2E_REG" daemon sleep "1000.$E2E_TOKEN" </dev/null >/dev/null 2>&1 &
echo $! >>"$E2E_DIR/worker.pids"
for _ in $(seq 300); do
  [ -e "$E2E_DIR/daemon.registered" ] && exit 7
  sleep 0.1
done
exit 91
