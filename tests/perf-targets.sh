#!/bin/sh
# bench/perf-targets: each target's count and the range of the cases that
# miss it, from lines of every kind, to the exact output.
set -eu
src="${top_srcdir:-.}"
in=$(mktemp)
out=$(mktemp)
trap 'rm -f "$in" "$out"' EXIT

printf '%s\n' \
	'shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=2627627099 dpdk_rate=2012108547 ratio=1.31' \
	'shmpool_perf cache=512 cores=2 n_get_bulk=64 n_put_bulk=64 n_keep=128 constant_n=1 rate_persec=2600000000 dpdk_rate=2100000000 ratio=1.24' \
	'shmpool_perf cache=512 cores=4 n_get_bulk=64 n_put_bulk=64 n_keep=4096 constant_n=0 rate_persec=900000000 dpdk_rate=0 ratio=inf' \
	'shmpool_perf cache=claimed512 cores=4 n_get_bulk=4 n_put_bulk=4 n_keep=32 constant_n=0 rate_persec=500000000 dpdk_rate=520000000 ratio=0.96' \
	'shmpool_perf cache=claimed512 cores=1 n_max_bulk=8 random=1 n_keep=128 constant_n=0 rate_persec=400000000 dpdk_rate=380000000 ratio=1.05' \
	'shmpool-perf: a message' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=32 constant_n=0 rate_persec=30000000 dpdk_rate=36000000 ratio=0.83' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=1 rate_persec=37000000 dpdk_rate=36000000 ratio=1.03' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=4 n_put_bulk=4 n_keep=128 constant_n=0 rate_persec=90000000 dpdk_rate=120000000 ratio=0.75' \
	'shmpool_perf cache=0 cores=1 n_max_bulk=32 random=1 n_keep=128 constant_n=0 rate_persec=300000000 dpdk_rate=250000000 ratio=1.20' \
	'shmpool_perf cache=0 cores=2 n_get_bulk=4 n_put_bulk=4 n_keep=128 constant_n=0 rate_persec=30000000 dpdk_rate=20000000 ratio=1.50' \
	'shmpool_perf cache=0 cores=4 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=0 rate_persec=9355121 dpdk_rate=1000000 ratio=9.36' \
	'shmpool_perf cache=0 cores=4 n_get_bulk=1 n_put_bulk=1 n_keep=512 constant_n=1 rate_persec=11249876 dpdk_rate=0 ratio=inf' \
	'shmpool_perf cache=0 cores=4 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=172000000 dpdk_rate=1000000 ratio=172.00' \
	'shmpool_perf cache=0 cores=4 n_get_bulk=8 n_put_bulk=4 n_keep=128 constant_n=0 rate_persec=99990000' \
	'shmpool_perf cache=0 cores=4 n_max_bulk=32 random=1 n_keep=128 constant_n=0 rate_persec=85200415 dpdk_rate=234935 ratio=362.65' \
	>"$in"

"$src/bench/perf-targets" --cpus 2 "$in" >"$out"
cat "$out"
[ "$(cat "$out")" = "$(printf '%s\n' \
	'cached, >= 1.0x DPDK: 4 of 5; the others 0.96 to 0.96' \
	'cached, bulk >= 32, >= 1.3x DPDK: 2 of 3; the others 1.24 to 1.24' \
	'cached, random sizes, >= 1.0x DPDK: 1 of 1' \
	'no cache, 1 worker, >= 1.0x DPDK: 2 of 4; the others 0.75 to 0.83' \
	'  bulk 1: 1 of 2' \
	'  bulk 4: 0 of 1' \
	'  bulk rand 1..32: 1 of 1' \
	'no cache, more workers than 2 CPUs, >= 100 M/s: 1 of 5; the others 9.3 to 99.9 M/s' \
	'  bulk 1: 0 of 2' \
	'  bulk 32: 1 of 1' \
	'  bulk 8/4: 0 of 1' \
	'  bulk rand 1..32: 0 of 1')" ]

# Standard input; with 4 CPUs no case has more workers than CPUs.
"$src/bench/perf-targets" --cpus 4 <"$in" >"$out"
[ "$(sed -n '$p' "$out")" = '  bulk rand 1..32: 1 of 1' ]
grep -q 'more workers' "$out" && exit 1

# Bad arguments: usage, exit 2; a file that cannot be read: exit 1.
rc=0; "$src/bench/perf-targets" --cpus x "$in" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ]
rc=0; "$src/bench/perf-targets" --cpus 2 "$in.none" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ]
echo "perf-targets: ok"
