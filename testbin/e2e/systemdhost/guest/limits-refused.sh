#!/bin/bash
# limits/refused's command (exec-sup.sh execs it, so the supervisor keeps its
# pid): makes bare/p below this service's own cgroup, which systemd delegated
# (Delegate=yes), enabling no controller for it, then runs the supervisor
# with --cgroup-parent there and limits it cannot enforce there. It must exit
# 64 before the worker starts, naming the controller and the fix.
set -u
d=$1
. "$d/params"
own=/sys/fs/cgroup$(cut -d: -f3- /proc/self/cgroup)
mkdir -p "$own/bare/p"
exec "$SUP" run --cgroup-parent "$own/bare/p" --memory-max 64M --cpu-max 0.5 -- "$d/worker"
