#!/bin/bash
# The --cpu-max worker (through the scenario's wrapper): two CPU hogs,
# registered, then waits for them; e2e.py cpumeter measures them from
# outside, and run's --timeout ends the whole throttled tree, which must
# still be killed and proven gone within the teardown's bounds.
set -u
echo $$ >>"$E2E_DIR/worker.pids"
for _ in 1 2; do
  python3 "$E2E_G/e2e.py" register "$E2E_REG" hog python3 "$E2E_G/e2e.py" hog "$E2E_TOKEN" </dev/null >/dev/null 2>&1 &
  echo $! >>"$E2E_DIR/worker.pids"
done
wait
