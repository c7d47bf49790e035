#!/bin/bash
# Runs in the scenario's start-up mode (run.sh's launch): records what the
# mode gave (user, cgroup and its owner, session environment) and what doctor
# says in this mode (once per mode: the mode's scenarios share it), then
# becomes the scenario's command, the supervisor (exec: same pid, written to
# DIR/sup.pid), so the mode's cgroup holds nothing of the scenario's but it.
d=$1
. "$d/params"
cg=$(cut -d: -f3- /proc/self/cgroup)
{
  echo "uid=$(id -u)"
  echo "cgroup=$cg"
  echo "cgroup_owner=$(stat -c %u "/sys/fs/cgroup$cg" 2>/dev/null)"
  echo "xdg=${XDG_RUNTIME_DIR-<unset>}"
  echo "dbus=${DBUS_SESSION_BUS_ADDRESS-<unset>}"
} >"$d/mode.txt"
if [ -n "$DOCTOR" ] && [ ! -s "$DOCTOR" ]; then
  {
    echo "(in $NAME's mode: $cg, uid $(id -u))"
    timeout 30 "$SUP" doctor 2>&1
    echo "(doctor exited $?; 124: timed out after 30 s)"
  } >"$DOCTOR.tmp"
  mv "$DOCTOR.tmp" "$DOCTOR"
fi
echo $$ >"$d/sup.pid"
exec env OCTO_E2E_MARK="$MARK" "${CMD[@]}"
