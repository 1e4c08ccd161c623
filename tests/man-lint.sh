#!/bin/sh
# Lint the man pages with mandoc and groff, whichever are installed (both,
# after scripts/deps); any warning fails.
set -u
dir="${top_srcdir:-.}/man"
have_mandoc=0
have_groff=0
command -v mandoc >/dev/null 2>&1 && have_mandoc=1
command -v groff >/dev/null 2>&1 && have_groff=1
if [ $have_mandoc -eq 0 ] && [ $have_groff -eq 0 ]; then
	echo "SKIP: neither mandoc nor groff is installed (apt-get install mandoc groff-base)"
	exit 77
fi
status=0
for page in "$dir"/*.[0-9]; do
	if [ $have_mandoc -eq 1 ]; then
		out=$(mandoc -T lint -W warning "$page" 2>&1)
		if [ -n "$out" ]; then
			printf '%s\n' "$out"
			status=1
		fi
	fi
	if [ $have_groff -eq 1 ]; then
		groff_out=$(groff -man -ww -z "$page" 2>&1)
		if [ -n "$groff_out" ]; then
			printf '%s: %s\n' "$page" "$groff_out"
			status=1
		fi
	fi
done
[ $status -eq 0 ] && echo "man pages: no warnings"
exit $status
