#!/usr/bin/env bash
# Two agents, one election room, no server and no network (`make demo` builds the
# binaries and runs this; you can read it from top to bottom, and demo-agents.sh,
# which it shares with demo-cluster.sh, with it).
#
# Both agents are `octostore-supervisor election <room> <candidate> <worker>` with
# the embedded hold on the host-local authority (`--server local`): the room is an
# exclusive file lock in a state directory. One leads and runs its worker; the
# other waits. Then we SIGKILL the leader's hold process. The kernel drops its file
# lock at once, so the second agent's hold wins the room almost immediately - but
# its supervisor starts its worker only after the first supervisor has killed the
# first worker's whole tree (including a daemonized grandchild) and proven it gone.
# The second worker checks that itself, through /proc, as it starts; the
# timestamps printed at the end show the order.
cd "$(dirname "$0")"
source ./demo-agents.sh

server=local
create_room
say "state directory $XDG_RUNTIME_DIR/octostore, room $room"
start_agents 10

hand_over "its file lock is released by the kernel now" 15
stop_other
say "done: nothing the demo started is left"
