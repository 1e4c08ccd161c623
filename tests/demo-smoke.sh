#!/bin/sh
# The README's demo, briefly: a private pool first, then the same workers
# through a shmpoold of our own (its own socket and folder), driven by
# shmpoolctl.  Each must run its workers and end with a whole pool.
set -eu
b="${top_builddir:-.}"
out=$("$b/examples/shmpool-demo" --workers 2 --seconds 0.2)
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q '^pool demo-[0-9]*: size 4096, avail 4096, in use 0,'
[ "$(printf '%s\n' "$out" | grep -c '^worker [0-9]*: got and put back [1-9][0-9]* objects$')" -eq 2 ]
[ "$(printf '%s\n' "$out" | tail -n 1)" = ok ]

dir=$(mktemp -d /dev/shm/shmpool-smoke.XXXXXX)
daemon=
daemon2=
cleanup() {
	[ -z "$daemon" ] || kill -KILL "$daemon" 2>/dev/null || :
	[ -z "$daemon2" ] || kill -KILL "$daemon2" 2>/dev/null || :
	rm -rf "$dir"
}
trap cleanup EXIT
export SHMPOOL_SOCKET="$dir/sock"
ctl="$b/shmpoolctl/shmpoolctl"

# No daemon yet: unreachable is exit 3.
set +e
"$ctl" list >/dev/null 2>&1; rc=$?
set -e
[ $rc -eq 3 ] || { echo "list without a daemon: exit $rc, not 3"; exit 1; }

"$b/shmpoold/shmpoold" -f --hugetlbfs none --shm-dir "$dir" 2>"$dir/log" &
daemon=$!
i=0
until "$ctl" ping >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "shmpoold did not answer within 10 s"; cat "$dir/log"; exit 1; }
	sleep 0.1
done

"$ctl" create demo --objects 4096 --object-size 64 --cache 64
out=$("$b/examples/shmpool-demo" --pool demo --workers 2 --seconds 0.2)
printf '%s\n' "$out"
[ "$(printf '%s\n' "$out" | grep -c '^worker [0-9]*: got and put back [1-9][0-9]* objects$')" -eq 2 ]
[ "$(printf '%s\n' "$out" | tail -n 1)" = ok ]
# A pool whose objects cannot hold the stamp, and options that shape the
# demo's own pool given with --pool: refused, before any worker runs.
"$ctl" create tiny --objects 64 --object-size 4 >/dev/null
set +e
"$b/examples/shmpool-demo" --pool tiny >"$dir/out" 2>"$dir/err"; rc_tiny=$?
"$b/examples/shmpool-demo" --pool demo --objects 8 >/dev/null 2>"$dir/err2"; rc_opts=$?
set -e
[ "$rc_tiny $rc_opts" = "1 2" ] || { echo "demo, tiny objects and --pool --objects: exit $rc_tiny $rc_opts, not 1 2"; exit 1; }
[ ! -s "$dir/out" ] || { echo "demo of tiny objects printed: $(cat "$dir/out")"; exit 1; }
[ "$(cat "$dir/err")" = "shmpool-demo: pool tiny: objects of 4 bytes cannot hold the demo's stamp of 8" ] ||
	{ echo "demo of tiny objects: stderr: $(cat "$dir/err")"; exit 1; }
[ "$(head -n 1 "$dir/err2")" = "shmpool-demo: --objects, --object-size and --cache shape a pool of the demo's own, not one of --pool" ] ||
	{ echo "demo --pool --objects: stderr: $(cat "$dir/err2")"; exit 1; }
"$ctl" destroy tiny >/dev/null
info=$("$ctl" info demo)
printf '%s\n' "$info" | grep -qx 'avail: 4096'
printf '%s\n' "$info" | grep -qx 'slots-in-use: 0'
printf '%s\n' "$info" | grep -qx 'memory: shm'

set +e
"$ctl" create demo --objects 4096 --object-size 64 >/dev/null 2>&1; rc_exists=$?
"$ctl" create demo --objects 4096 --object-size 64 --if-not-exists >/dev/null; rc_ine=$?
"$ctl" create bad --objects 0 --object-size 64 >/dev/null 2>&1; rc_usage=$?
"$ctl" info nosuch >/dev/null 2>&1; rc_nosuch=$?
set -e
[ "$rc_exists $rc_ine $rc_usage $rc_nosuch" = "1 0 2 4" ] || {
	echo "exit codes: $rc_exists $rc_ine $rc_usage $rc_nosuch, not 1 0 2 4"
	exit 1
}
"$ctl" destroy demo
[ "$("$ctl" list)" = "NAME MEMORY OBJECTS OBJECT-SIZE SLOTS-IN-USE AVAIL" ]
# ends PID: it is gone (or a zombie) within 10 s.
ends() {
	i=0
	while [ -e "/proc/$1" ] && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "shmpoold $1 still running 10 s after SIGTERM"; exit 1; }
		sleep 0.1
	done
}
# no_files FILE...: none of them is there.
no_files() {
	for f in "$@"; do
		[ ! -e "$f" ] || { echo "$f left behind"; exit 1; }
	done
}
kill -TERM "$daemon"
ends "$daemon"
rc=0
wait "$daemon" || rc=$?
[ $rc -eq 0 ] || { echo "shmpoold: exit $rc after SIGTERM"; exit 1; }
daemon=
no_files "$dir/sock" "$dir/shmpool.demo"

# Without -f: it returns once serving, writes its pid next to the socket,
# and a SIGTERM takes socket, lock and pidfile away.
"$b/shmpoold/shmpoold" --socket "$dir/d2/sock" --hugetlbfs none --shm-dir "$dir"
daemon2=$(cat "$dir/d2/shmpoold.pid")
pid=$daemon2
"$ctl" --socket "$dir/d2/sock" ping >/dev/null
kill -TERM "$pid"
ends "$pid"
daemon2=
no_files "$dir/d2/sock" "$dir/d2/sock.lock" "$dir/d2/shmpoold.pid"
echo "daemon demo: ok"
