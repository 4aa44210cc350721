# scripts/callgrind-functions.awk, run as
#   awk -v requests=N -v top=K -f scripts/callgrind-functions.awk SYMBOLS DUMP
# prints the K functions of a Go program that executed the most instructions in a callgrind
# dump, per request (the dump's total over N), with each one's share of the total.
# SYMBOLS is `go tool nm -n -size` of the binary; DUMP is callgrind's output with
# --dump-instr=yes --dump-line=no --compress-pos=no, whose cost lines are "0xADDRESS COST".
#
# Why not callgrind_annotate: callgrind builds its functions from the calls and returns it
# follows, and a Go program's goroutine and stack switches seem to break those, so its
# per-function totals come out wrong (one put 99 % of a create in a single closure). Costs
# per instruction address are right, and the binary's symbol table says which function holds
# each address. The line after each "calls=" repeats the callee's whole cost at the call
# site: counting it would charge the callee twice.
function hex(s,    i, n) {
	n = 0
	s = tolower(s)
	sub(/^0x/, "", s)
	for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return n
}
# owner(a) is the function whose range [start, start+size) holds address a, by binary search.
function owner(a,    lo, hi, mid) {
	lo = 1; hi = nsym
	while (lo < hi) {
		mid = int((lo + hi + 1) / 2)
		if (start[mid] <= a) lo = mid; else hi = mid - 1
	}
	return (nsym && start[lo] <= a && a < start[lo] + size[lo]) ? name[lo] : "(outside the binary's functions)"
}
NR == FNR {
	if ($3 != "T" && $3 != "t") next
	nsym++
	start[nsym] = hex($1)
	size[nsym] = $2 + 0
	n = $0
	sub(/^ *[0-9a-f]+ +[0-9]+ +[Tt] +/, "", n)
	name[nsym] = n
	next
}
/^calls=/ { skip = 1; next }
/^0x[0-9a-f]+ [0-9]+$/ {
	if (skip) { skip = 0; next }
	cost[owner(hex($1))] += $2
	total += $2
	next
}
{ skip = 0 }
END {
	if (!total) { print "no costs per address in the dump: was it made with --dump-instr=yes --compress-pos=no?" > "/dev/stderr"; exit 1 }
	n = 0
	for (f in cost) { n++; fs[n] = f }
	# a selection of the top K: the list is some thousands of functions, K a few dozen
	for (i = 1; i <= top && i <= n; i++) {
		best = i
		for (j = i + 1; j <= n; j++) if (cost[fs[j]] > cost[fs[best]]) best = j
		t = fs[i]; fs[i] = fs[best]; fs[best] = t
		printf "%10.0f %5.1f %%  %s\n", cost[fs[i]] / requests, 100 * cost[fs[i]] / total, fs[i]
	}
	printf "%10.0f 100.0 %%  in all\n", total / requests
}
