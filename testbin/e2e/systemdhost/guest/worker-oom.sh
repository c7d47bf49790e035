#!/bin/bash
# The --memory-max worker (through the scenario's wrapper, which sets E2E_*):
# starts a setsid daemon, registered with its pid, waits until it runs,
# writes worker-started, then becomes e2e.py alloc, which allocates past any
# 64M limit. memory.oom.group must kill the whole tree, daemon included.
set -u
echo $$ >>"$E2E_DIR/worker.pids"
setsid python3 "$E2E_G/e2e.py" register "$E2E_REG" daemon sleep "1000.$E2E_TOKEN" </dev/null >/dev/null 2>&1 &
echo $! >>"$E2E_DIR/worker.pids"
for _ in $(seq 300); do
  if [ -e "$E2E_DIR/daemon.registered" ]; then
    touch "$E2E_DIR/worker-started"
    exec python3 "$E2E_G/e2e.py" alloc "$E2E_DIR" "$E2E_TOKEN"
  fi
  sleep 0.1
done
exit 91
