#!/usr/bin/env bash
# Prints docs/ARCHITECTURE.md's import table as `go list` sees it (one row per
# package of this module, the module's packages it imports), to paste into the
# document when internal/archtest says it is out of date. With --write it
# replaces the table in docs/ARCHITECTURE.md itself.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --write ]; then
	doc=docs/ARCHITECTURE.md
	table=$("$0")
	awk -v table="$table" '
		/^\| package \| imports \(ours\) \|/ { print table; skip = 1; next }
		skip && /^\|/ { next }
		{ skip = 0; print }
	' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
	exit 0
fi
module=$(go list -m)
echo "| package | imports (ours) |"
echo "| --- | --- |"
go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... | sort | while read -r pkg imps; do
	ours=()
	for i in $imps; do
		case $i in "$module"/*) ours+=("${i#"$module"/}") ;; esac
	done
	cell=none
	if ((${#ours[@]})); then
		cell=$(printf '%s\n' "${ours[@]}" | LC_ALL=C sort | sed 's/.*/`&`/' | paste -sd, | sed 's/,/, /g')
	fi
	echo "| \`${pkg#"$module"/}\` | $cell |"
done
