# scripts/medians.awk ends the awk programs of scripts/perf and scripts/perf-cluster: their
# patterns read the tables of payments-load, one file per run, and collect each figure with
# add(KEY, VALUE); at the end this prints, for each key in the order first seen, the median
# over the runs, then the figure of every run.
function median(key,    n, i, j, v, t) {
	n = split(vals[key], v, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(key, x) { vals[key] = vals[key] " " x; if (!(key in seen)) { seen[key] = 1; order[++keys] = key } }
END {
	for (k = 1; k <= keys; k++) printf "%-36s %8s   (%d runs:%s)\n", order[k], median(order[k]), split(vals[order[k]], x, " "), vals[order[k]]
}
