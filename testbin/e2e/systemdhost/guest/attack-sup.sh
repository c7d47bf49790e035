#!/bin/bash
# Starts one supervisor of an attack-cgroup.sh or user-manager.sh scenario:
# attack-sup.sh DIR ROLE, run as tester in its login session (su -l) or as
# root in a transient service. Records what that gave (DIR/ROLE.mode: uid,
# cgroup, session environment), then becomes ROLE's command (DIR/ROLE.cmd
# sets CMD) by exec, so DIR/ROLE.pid is the supervisor's pid.
d=$1
role=$2
. "$d/params"
. "$d/$role.cmd"
{
  echo "uid=$(id -u)"
  echo "cgroup=$(cut -d: -f3- /proc/self/cgroup)"
  echo "xdg=${XDG_RUNTIME_DIR-<unset>}"
  echo "dbus=${DBUS_SESSION_BUS_ADDRESS-<unset>}"
} >"$d/$role.mode"
echo $$ >"$d/$role.pid"
exec env OCTO_E2E_MARK="$MARK" "${CMD[@]}"
