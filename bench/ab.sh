#!/bin/sh
# ab.sh: old binary against new, ingest under wrk, alternated in one sitting,
# for BENCHMARKS.md's "no regression" pairs: each pair runs wrk against a
# bare server and against each binary's `bench-server --kind hookbox` on a
# fresh store (the order of the two hookboxes alternating), and prints
# req/s, p99 and hookbox ÷ bare for both; then the medians and the ratio of
# the two ratios (new ÷ old). With E2E=1 each pair also runs each binary's
# own `hookbox bench --mode e2e --rounds 1` and prints its backlog drain
# (deliveries a second) and e2e ÷ ingest.
#
# Usage: bench/ab.sh OLD NEW [PAIRS] [CONNS] [DURATION]
#
#   OLD, NEW   two hookbox binaries (CGO_ENABLED=0 go build -o /tmp/new .)
#   PAIRS      default 3; CONNS default 64; DURATION default 5s
#
# Environment: THREADS (wrk's, default 2), TMPDIR (where the stores go).
set -eu
old=${1:?usage: bench/ab.sh OLD NEW [PAIRS] [CONNS] [DURATION]}
new=${2:?usage: bench/ab.sh OLD NEW [PAIRS] [CONNS] [DURATION]}
pairs=${3:-3}
conns=${4:-64}
duration=${5:-5s}
name=ab.sh
. "$(cd "$(dirname "$0")" && pwd)/servers.sh"

e2e() {
	"$1" bench --mode e2e --rounds 1 --json 2>/dev/null | awk -v n="$2" '/"type":"round"/ && /"server":"backlog"/ {
		match($0, /"per_s":[0-9.e+]+/); print n, "drain", substr($0, RSTART + 8, RLENGTH - 8) }'
}

results=$dir/results
: >"$results"
p=1
while [ "$p" -le "$pairs" ]; do
	if [ $((p % 2)) -eq 1 ]; then first=old; second=new; else first=new; second=old; fi
	{
		start "$new" bare; wrk_load bare "ab-$$-$p-bare"
		for b in $first $second; do
			eval bin=\$$b
			start "$bin" hookbox "$(hookbox_config "$b$p")"; wrk_load "$b" "ab-$$-$p-$b"
		done
		if [ "${E2E:-}" = 1 ]; then e2e "$old" old-e2e; e2e "$new" new-e2e; fi
	} | sed "s/^/$p /" | tee -a "$results" >&2
	p=$((p + 1))
done
awk '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$2 == "bare" || $2 == "old" || $2 == "new" { v[$2, $1] = $3; q[$2, $1] = $4; ps[$1] = 1 }
	$3 == "drain" { d[$2, $1] = $4 }
	END {
		n = 0
		for (p in ps) {
			n++; ro[n] = v["old", p] / v["bare", p]; rn[n] = v["new", p] / v["bare", p]; rr[n] = rn[n] / ro[n]
			po[n] = q["old", p]; pn[n] = q["new", p]; b[n] = v["bare", p]
			if (("old-e2e", p) in d) { m++; dold[m] = d["old-e2e", p]; dnew[m] = d["new-e2e", p] }
		}
		printf "median of %d pairs: bare %.0f req/s; old %.3f x bare (p99 %.2f ms); new %.3f x bare (p99 %.2f ms); new/old %.3f\n",
			n, median(b, n), median(ro, n), median(po, n), median(rn, n), median(pn, n), median(rr, n)
		if (m > 0) printf "backlog drain: old %.0f/s, new %.0f/s (medians of %d)\n", median(dold, m), median(dnew, m), m
	}' "$results"
