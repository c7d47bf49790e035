#!/bin/bash
# Indicative gate and teardown figures on the systemd host, run as root inside
# the VM: bench.sh PAYLOAD RESULTS N. Software emulation (TCG) makes every
# figure slower than on hardware; they are for comparing with each other and
# with later runs of the same VM, not with the development host's table.
#
# Each of N rounds starts an election on the local authority in a plain root
# service (the mode that takes the shared delegated scope), waits for its
# worker, and stops it with SIGTERM. It writes RESULTS/bench.txt, one line a
# round: "START_NS TEARDOWN_NS CONTAINMENT_MS", where START is systemd-run
# called -> the worker's first line of shell (the service's start, the
# supervisor's, the scope, the hold taking the lock, the gate), TEARDOWN is
# SIGTERM sent -> the supervisor's exit (the worker's tree proven gone, the
# release, the terminal line), and CONTAINMENT is that line's
# containment.duration_ms.
set -u
P=$1
R=$2
N=${3:-10}
SUP=/usr/local/bin/octostore-supervisor
install -m 0755 "$P/bin/octostore-supervisor" /usr/local/bin/
W=/tmp/octo-bench
mkdir -p "$W"
cat >"$W/worker.sh" <<'EOF'
#!/bin/sh
date +%s%N >/tmp/octo-bench/started.tmp && mv /tmp/octo-bench/started.tmp /tmp/octo-bench/started
exec sleep 1000
EOF
chmod 0755 "$W/worker.sh"
: >"$R/bench.txt"

wait_for() { # FILE PATTERN: polled, up to 30 s
  for _ in $(seq 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

for i in $(seq "$N"); do
  rm -f "$W/started" "$W/out"
  unit=octo-bench-$i
  t_start=$(date +%s%N)
  systemd-run --quiet --unit="$unit" --collect --service-type=exec \
    -p StandardOutput="file:$W/out" "$SUP" election --server local bench-room "r$i" "$W/worker.sh"
  if ! wait_for "$W/started" . || ! wait_for "$W/out" '"event":"leader"'; then
    echo "round $i: the worker never started" >>"$R/bench.err"
    systemctl stop "$unit"
    continue
  fi
  pid=$(systemctl show -p MainPID --value "$unit")
  t0=$(date +%s%N)
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.001; done
  t1=$(date +%s%N)
  wait_for "$W/out" '"event":"released"'
  ms=$(grep '"event":"released"' "$W/out" | sed -n 's/.*"duration_ms":\([0-9]*\).*/\1/p')
  if [ -z "$ms" ]; then
    echo "round $i: no released line with a containment duration" >>"$R/bench.err"
    continue
  fi
  echo "$(( $(cat "$W/started") - t_start )) $((t1 - t0)) $ms" >>"$R/bench.txt"
done
