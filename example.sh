#!/usr/bin/env bash
# One supervised run you can read from top to bottom (`make example` builds the
# binaries and runs this).
#
# The hold here is the scripted fault injector from testbin/fakehold, standing
# in for `octostore election hold ... --json`: it waits, becomes leader, renews
# once, then reports the leadership lost. The worker daemonizes a grandchild with
# setsid - exactly what the upstream shell supervisor leaks - and keeps working.
# Watch the order: the worker's TERM handler runs, the daemon is killed, both
# process trees are proven empty, and only then is "lost" printed.
set -uo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/worker.sh" <<EOF
#!/bin/sh
echo "worker: started with fencing term \$OCTOSTORE_FENCING_TERM" >&2
setsid sh -c 'echo \$\$ > "$work/daemon.pid"; exec sleep 600' &
trap 'echo "worker: got TERM, cleaning up" >&2; exit 0' TERM
while :; do echo "worker: working" >&2; sleep 0.4; done
EOF
chmod +x "$work/worker.sh"

echo "== supervisor stdout (supervisor lines only; the worker's output goes to stderr)"
bin/octostore-supervisor election example-room agent-a "$work/worker.sh" -- \
  bin/fakehold --name example-room --candidate agent-a \
    emit:waiting sleep:500ms \
    emit:leader,term=7,budget=5000 sleep:1s \
    emit:renewed,term=7,budget=5000 sleep:1s \
    emit:lost,term=7,reason=lease_not_current
code=$?
echo "== supervisor exit code: $code (20 = authority lost, containment proven)"

daemon=$(cat "$work/daemon.pid" 2>/dev/null || true)
if [ -n "$daemon" ] && [ -e "/proc/$daemon" ]; then
  echo "== the worker's daemonized grandchild (pid $daemon) is STILL RUNNING" >&2
  kill -KILL "$daemon"
  exit 1
fi
echo "== the worker's daemonized grandchild (pid ${daemon:-?}) is gone"
[ "$code" -eq 20 ]
