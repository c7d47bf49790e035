#!/usr/bin/env bash
# Two agents, one election room, on a three-member etcd cluster of their own on
# loopback (`make demo-cluster` builds the binaries and runs this; it is offline,
# and reads from top to bottom, with demo-agents.sh, which it shares with
# demo.sh).
#
# Both agents are `octostore-supervisor election <room> <candidate> <worker>` with
# the embedded hold on the cluster (`--server etcd://…`): each candidate is a key
# under a lease that its hold keeps alive; the oldest key leads. First we kill the
# etcd member that leads the cluster: the two left elect a new leader, and nothing
# happens to the agents but renewals retried meanwhile. Then we SIGKILL the
# leading agent's hold. Nobody revokes its lease, so etcd ends it only when its
# TTL runs out - long after the first supervisor has killed its worker's whole
# tree (a daemonized grandchild included) and proven it gone. Only then does the
# second agent lead and start its worker, which checks through /proc that the
# first one's tree is gone; the timestamps show the order.
cd "$(dirname "$0")"
source ./demo-agents.sh

# The etcd server: $OCTOSTORE_DEMO_ETCD, else etcd on PATH, else the pinned 3.6
# that `make etcd36` builds.
etcd=${OCTOSTORE_DEMO_ETCD:-$(command -v etcd || echo "$PWD/bin/etcd-3.6")}
[ -x "$etcd" ] || die "no etcd server: apt-get install etcd-server etcd-client, or make etcd36"
version=$("$etcd" --version | sed -n 's/^etcd Version: //p')
# supported <version>: at or above the floor the hold enforces (3.4.31, 3.5.13,
# 3.6.0: fixes of lease revocation and renewal).
supported() {
  local floor
  case $1 in 3.4.*) floor=3.4.31 ;; 3.5.*) floor=3.5.13 ;; *) floor=3.6.0 ;; esac
  [ "$(printf '%s\n%s\n' "$floor" "$1" | sort -V | head -n1)" = "$floor" ]
}
if ! supported "$version"; then
  export OCTOSTORE_ETCD_ALLOW_OLD_SERVER=1
  say "etcd $version is below the supported floor; the demo sets OCTOSTORE_ETCD_ALLOW_OLD_SERVER=1, which is for tests, never for production"
fi

# Ports of its own: clients base+1..3, peers base+11..13, below the range the
# test clusters pick from, never etcd's 2379/2380; a base with any of them in use
# is skipped.
in_use() { (: <> "/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=${OCTOSTORE_DEMO_ETCD_PORT_BASE:-}
for ((try = 0; try < 50 && ${#base} == 0; try++)); do
  base=$((12000 + RANDOM % 2900))
  for i in 0 1 2; do in_use $((base + 1 + i)) || in_use $((base + 11 + i)) && base="" && break; done
done
[ -n "$base" ] || die "no free loopback ports for the cluster"
client() { echo "127.0.0.1:$((base + 1 + $1))"; }
peer() { echo "http://127.0.0.1:$((base + 11 + $1))"; }

# The members' election timeout is 1 s, as in production: a new etcd leader
# takes 1-2 s, far less than what a hold with --ttl 20 may spend on one renewal
# (its budget is 0.8 × 20 s). A renewal that falls into that gap is retried.
members=()
initial="m0=$(peer 0),m1=$(peer 1),m2=$(peer 2)"
for i in 0 1 2; do
  "$etcd" --name "m$i" --data-dir "$work/m$i" \
    --listen-client-urls "http://$(client $i)" --advertise-client-urls "http://$(client $i)" \
    --listen-peer-urls "$(peer $i)" --initial-advertise-peer-urls "$(peer $i)" \
    --initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token "octostore-demo-$base" \
    --election-timeout 1000 --heartbeat-interval 100 --log-level warn > "$work/m$i.log" 2>&1 &
  members+=($!)
  services+=($!)
done
server="etcd://$(client 0),$(client 1),$(client 2)/octostore-demo"

# leads <member>: the member says it is the cluster's leader (asked with our
# own doctor, which reports each member's view; it exits 70 for a server
# below the supported floor, which the demo has allowed).
leads() {
  local report
  report=$("$bin/octostore-supervisor" doctor --json --server "etcd://$(client "$1")" 2>/dev/null)
  grep -q '"reachable":true,"version":"[^"]*","leader":true' <<< "$report"
}
# etcd_leader: the index of the one running member that leads (empty while
# none or more than one says so).
etcd_leader() {
  local i found=""
  for i in 0 1 2; do
    [ -e "/proc/${members[$i]}" ] || continue
    if leads "$i"; then
      [ -z "$found" ] || return
      found=$i
    fi
  done
  echo "$found"
}
await_etcd_leader() {
  local i l
  for ((i = 0; i < 300; i++)); do
    l=$(etcd_leader)
    [ -n "$l" ] && { echo "$l"; return 0; }
    sleep 0.1
  done
  return 1
}
l=$(await_etcd_leader) || die "the etcd members never agreed on a leader (logs in $work/m*.log)"
say "etcd $version: members m0 m1 m2 (pids ${members[*]}) on $(client 0) $(client 1) $(client 2); m$l leads the cluster"

create_room
say "room $room on $server"
start_agents 20

# The etcd leader dies. Both holds renew their leases every 5 s; a renewal sent
# before the two members left have elected a new leader fails ("no leader", or
# the dead member's refused connection) and is retried, each try bounded by 1 s:
# the holds say so on the agents' stderr, shown as it comes, and the waiting
# agent's hold reports it as "waiting" lines. The leading supervisor sees
# nothing but its next "renewed" lines; had its hold's budget run out first, it
# would have said uncertain, and its supervisor would have stopped its worker.
killed=$(date +%s%N)
say "SIGKILL to etcd member m$l (pid ${members[$l]}), the cluster's leader"
kill -KILL "${members[$l]}"
wait "${members[$l]}" 2>/dev/null
n=$(await_etcd_leader) || die "the two members left never elected a leader"
elected=$(date +%s%N)
say "m$n leads the cluster now, $(((elected - killed) / 1000000)) ms after the kill"
# renewed_since <agent> <ns>: the agent printed a renewed line after ns.
renewed_since() { awk -v t="$2" '$1 > t && /"event":"renewed"/ { found = 1 } END { exit !found }' "$work/$1.out"; }
for ((i = 0; i < 300; i++)); do renewed_since "$leader" "$elected" && break; sleep 0.1; done
renewed_since "$leader" "$elected" || die "$leader's hold did not renew through the new etcd leader"
for a in agent-a agent-b; do
  [ -e "/proc/$(cat "$work/$a.pid")" ] || die "$a's supervisor ended after the etcd leader was killed"
  awk -v t="$killed" '$1 > t && /"event":"(lost|uncertain|released|error)"/ { bad = 1 } END { exit bad }' "$work/$a.out" ||
    die "$a printed a terminal line after the etcd leader was killed"
done
say "$leader's hold renewed through the new etcd leader; since the kill, no terminal line from either agent ($other's hold says it still waits), and $leader's worker went on"

hand_over "no one revokes its lease; etcd ends it when its 20 s TTL runs out" 40
stop_other

# The cluster last: the agents needed it to the end. Followers first: a leader
# asked to stop hands its leadership over, and would wait in vain for members
# that are stopping too.
l=$(etcd_leader)
for i in 0 1 2; do
  [ "$i" = "$l" ] && continue
  kill -TERM "${members[$i]}" 2>/dev/null
  wait "${members[$i]}" 2>/dev/null
done
[ -n "$l" ] && kill -TERM "${members[$l]}" && wait "${members[$l]}"
for p in "${members[@]}"; do [ -e "/proc/$p" ] && die "etcd member pid $p is STILL RUNNING"; done
services=()
say "done: nothing the demo started is left (agents, workers, daemons, etcd members)"
