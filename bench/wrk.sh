#!/bin/sh
# wrk.sh: measures the bare server and hookbox with `hookbox bench`'s own
# load generator and with wrk (github.lua), alternated in one sitting, so
# that the generator can be checked against wrk on the same machine in the
# same minutes (BENCHMARKS.md, "The load generator against wrk, in one sitting").
#
# Usage: bench/wrk.sh HOOKBOX [PAIRS] [CONNS] [DURATION]
#
#   HOOKBOX    a hookbox binary (CGO_ENABLED=0 go build -o /tmp/hookbox .)
#   PAIRS      how many times to run both generators (default 3)
#   CONNS      connections (default 64)
#   DURATION   load time a server (default 5s)
#
# Environment: THREADS, wrk's threads (default 2: one per core of the
# machine these figures were taken on); OTHER, a second hookbox binary
# whose `hookbox bench` also runs in every pair (an older build, to see how
# its generator compares); TMPDIR, where the stores go (a real disk, as for
# `hookbox bench`).
#
# Each pair runs `HOOKBOX bench --mode ingest --rounds 1` (a bare server and
# a hookbox, each a fresh child, loaded in turn by the built-in generator)
# and wrk against a fresh `HOOKBOX bench-server --kind bare` and a fresh
# `HOOKBOX bench-server --kind hookbox` on a new store, with the same
# connections, duration, body (testdata/push-1024.json, the generator's
# default), secret and signature; the two generators go first in turn. It
# prints req/s (200 answers a second), the p99 and hookbox ÷ bare for each
# run, and the medians. wrk's errors (non-2xx answers, socket errors) are
# printed as they come: a run with errors does not measure what it says.
set -eu

hookbox=${1:?usage: bench/wrk.sh HOOKBOX [PAIRS] [CONNS] [DURATION]}
pairs=${2:-3}
conns=${3:-64}
duration=${4:-5s}
other=${OTHER:-}
name=wrk.sh
. "$(cd "$(dirname "$0")" && pwd)/servers.sh"

# wrk_run KIND PAIR prints "wrk KIND REQ/S P99-MS".
wrk_run() {
	cfg=
	if [ "$1" = hookbox ]; then
		cfg=$(hookbox_config "p$2")
	fi
	start "$hookbox" "$1" "$cfg"
	wrk_load "wrk $1" "wrk-$$-$2-$1"
}

# bench_run BINARY NAME prints "NAME bare REQ/S P99-MS" and "NAME hookbox …".
bench_run() {
	"$1" bench --mode ingest --conns "$conns" --duration "$duration" --rounds 1 --json 2>/dev/null |
		awk -v name="$2" '/"type":"round"/ {
			match($0, /"acks_per_s":[0-9.e+]+/); rps = substr($0, RSTART + 13, RLENGTH - 13)
			match($0, /"p99_ms":[0-9.e+]+/); p99 = substr($0, RSTART + 9, RLENGTH - 9)
			match($0, /"server":"[^"]*"/); server = substr($0, RSTART + 10, RLENGTH - 11)
			printf "%s %s %.0f %.2f\n", name, server, rps, p99 }'
}

echo "pairs=$pairs conns=$conns duration=$duration wrk threads=$threads body=$(wc -c <"$body") bytes" >&2
results=$dir/results
: >"$results"
p=1
while [ "$p" -le "$pairs" ]; do
	if [ $((p % 2)) -eq 1 ]; then
		order="bench wrk"
	else
		order="wrk bench"
	fi
	for g in $order; do
		if [ "$g" = bench ]; then
			bench_run "$hookbox" bench
			[ -n "$other" ] && bench_run "$other" other
		else
			wrk_run bare "$p"
			wrk_run hookbox "$p"
		fi
	done | sed "s/^/$p /" | tee -a "$results" >&2
	p=$((p + 1))
done

# Medians of req/s and p99 by generator and server, and of the ratio pair by pair.
awk '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ rps[$2, $3, $1] = $4; p99[$2, $3, $1] = $5; gens[$2] = 1; pairs[$1] = 1 }
	END {
		printf "%-6s %12s %12s %10s %10s %14s\n", "", "bare req/s", "hookbox", "bare p99", "hookbox p99", "hookbox÷bare"
		for (g in gens) {
			n = 0
			for (p in pairs) if ((g, "bare", p) in rps) {
				n++; b[n] = rps[g, "bare", p]; h[n] = rps[g, "hookbox", p]; r[n] = h[n] / b[n]
				bp[n] = p99[g, "bare", p]; hp[n] = p99[g, "hookbox", p]
			}
			printf "%-6s %12.0f %12.0f %10.2f %10.2f %14.3f\n", g, median(b, n), median(h, n), median(bp, n), median(hp, n), median(r, n)
		}
	}' "$results"
