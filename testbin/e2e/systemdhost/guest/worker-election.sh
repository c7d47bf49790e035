#!/bin/bash
# The election's worker (through a wrapper that sets E2E_*): starts a setsid
# daemon, registered with its pid, writes worker-started once it runs, and
# runs until the supervisor's teardown ends it.
set -u
echo $$ >>"$E2E_DIR/worker.pids"
setsid python3 "$E2E_G/e2e.py" register "$E2E_REG" daemon sleep "1000.$E2E_TOKEN" </dev/null >/dev/null 2>&1 &
echo $! >>"$E2E_DIR/worker.pids"
for _ in $(seq 300); do
  if [ -e "$E2E_DIR/daemon.registered" ]; then
    touch "$E2E_DIR/worker-started"
    exec sleep "2000.$E2E_TOKEN"
  fi
  sleep 0.1
done
exit 91
