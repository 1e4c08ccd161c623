#!/bin/sh
# Lint the man pages; any warning fails.
set -u
dir="${top_srcdir:-.}/man"
if ! command -v mandoc >/dev/null 2>&1; then
	echo "SKIP: mandoc is not installed (apt-get install mandoc)"
	exit 77
fi
status=0
for page in "$dir"/*.[0-9]; do
	out=$(mandoc -T lint -W warning "$page" 2>&1)
	if [ -n "$out" ]; then
		printf '%s\n' "$out"
		status=1
	fi
	command -v groff >/dev/null 2>&1 || continue
	groff_out=$(groff -man -ww -z "$page" 2>&1)
	if [ -n "$groff_out" ]; then
		printf '%s: %s\n' "$page" "$groff_out"
		status=1
	fi
done
[ $status -eq 0 ] && echo "man pages: no warnings"
exit $status
