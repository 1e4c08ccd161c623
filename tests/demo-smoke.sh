#!/bin/sh
# The README's demo, briefly: it must run its workers and end with a whole pool.
set -eu
out=$("${top_builddir:-.}/examples/shmpool-demo" --workers 2 --seconds 0.2)
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q '^pool demo-[0-9]*: size 4096, avail 4096, in use 0,'
[ "$(printf '%s\n' "$out" | grep -c '^worker [0-9]*: got and put back [1-9][0-9]* objects$')" -eq 2 ]
[ "$(printf '%s\n' "$out" | tail -n 1)" = ok ]
