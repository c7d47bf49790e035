#!/bin/bash
# The worker of an attacked election (through attack-cgroup.sh's wrapper,
# which sets E2E_* and E2E_ROLE): writes "PID UID CGROUP" to
# DIR/ROLE.worker, then a heartbeat (its /proc/uptime) to DIR/hb.ROLE every
# 100 ms until the supervisor's teardown ends it. The heartbeats let the
# scenario judge from outside whether it still ran, and whether a second
# worker of its room started while it lived.
# attack-victim.sh once: records DIR/ROLE.worker and exits 0 (a worker that
# only proves it ran, and as whom).
set -u
echo "$$ $(id -u) $(cut -d: -f3- /proc/self/cgroup)" >"$E2E_DIR/$E2E_ROLE.worker"
[ "${1-}" != once ] || exit 0
while :; do
  read -r up _ </proc/uptime
  echo "$up" >>"$E2E_DIR/hb.$E2E_ROLE"
  sleep 0.1
done
