#!/bin/sh
# replicas.sh: hookbox on PostgreSQL, for BENCHMARKS.md, everything on
# 127.0.0.1 and each run on a fresh schema of the database in
# HOOKBOX_BENCH_POSTGRES (dropped after it):
#
#   bench/replicas.sh ingest HOOKBOX [PAIRS] [CONNS] [DURATION]
#       wrk against the ingest ceiling (postgres/internal/ceiling: the same
#       INSERT … ON CONFLICT per request over pgx, nothing else) and against
#       one hookbox serve, alternated; prints req/s, p99 and hookbox ÷ ceiling.
#   bench/replicas.sh replicas HOOKBOX [PAIRS] [CONNS] [DURATION]
#       wrk through a round-robin proxy (bench/internal/rrproxy) to one
#       replica, then to three on one schema, alternated; prints the ratio.
#   bench/replicas.sh ab HOOKBOX [PAIRS] [CONNS] [DURATION]
#       wrk against one serve of the binary in $OLD, then of HOOKBOX,
#       alternated: the A/B pairs of a change to the ingest path.
#   bench/replicas.sh drainab HOOKBOX [PAIRS] [N]
#       the drain below by one replica of the binary in $OLD, then of
#       HOOKBOX, alternated.
#   bench/replicas.sh drain HOOKBOX [PAIRS] [N]
#       N (20,000) pending deliveries to a bare URL sink drained by one
#       replica, then by two, alternated; prints deliveries a second, and
#       checks that every delivery was attempted exactly once.
#
# In ingest, ab and replicas, each serve has a URL target (a bare sink),
# so that every event queues a delivery (and wakes the replicas), which its
# workers deliver meanwhile, and the ceiling inserts a pending delivery
# beside each event; TARGET=0 leaves both out (events only).
#
# Environment: HOOKBOX_BENCH_POSTGRES (postgres://…, required), THREADS,
# TARGET, OLD (ab).
set -eu
mode=${1:?usage: bench/replicas.sh ingest|replicas|drain HOOKBOX [PAIRS] …}
bin=${2:?usage: bench/replicas.sh MODE HOOKBOX [PAIRS] …}
pairs=${3:-3}
conns=${4:-64}
duration=${5:-5s}
name=replicas.sh
: "${HOOKBOX_BENCH_POSTGRES:?set HOOKBOX_BENCH_POSTGRES=postgres://…}"
command -v psql >/dev/null || { echo "$name: psql is not installed" >&2; exit 1; }
. "$(cd "$(dirname "$0")" && pwd)/servers.sh"
root=$(cd "$here/.." && pwd)
(cd "$root" && go build -o "$dir/ceiling" ./postgres/internal/ceiling && go build -o "$dir/rrproxy" ./bench/internal/rrproxy)

psql_base() { PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" psql -qAtX -v ON_ERROR_STOP=1 "$HOOKBOX_BENCH_POSTGRES" "$@"; }
schemas=
new_schema() {
	schema=hookbox_bench_$$_$1
	psql_base -c "CREATE SCHEMA $schema"
	schemas="$schemas $schema"
	case $HOOKBOX_BENCH_POSTGRES in *\?*) url="$HOOKBOX_BENCH_POSTGRES&search_path=$schema" ;; *) url="$HOOKBOX_BENCH_POSTGRES?search_path=$schema" ;; esac
}
in_schema() { PGOPTIONS="-c search_path=$schema" psql_base "$@"; }
drop_schemas() { for s in $schemas; do psql_base -c "DROP SCHEMA $s CASCADE" || true; done; schemas=; }

# spawn NAME FD CMD… runs a background program that stops when its stdin
# (fd FD here) closes, and sets addr from its "listening on" line.
spawn() {
	sn=$1; fd=$2; shift 2
	rm -f "$dir/$sn.in" "$dir/$sn.out"; mkfifo "$dir/$sn.in"
	"$@" <"$dir/$sn.in" >"$dir/$sn.out" 2>>"$dir/err" &
	eval "pid_$fd=$!; exec $fd>\"$dir/$sn.in\""
	i=0
	until grep -q '^listening on http://' "$dir/$sn.out" 2>/dev/null; do
		i=$((i + 1)); [ "$i" -gt 600 ] && { echo "$name: $sn did not start" >&2; cat "$dir/err" >&2; exit 1; }
		sleep 0.05
	done
	addr=$(sed -n 's#^listening on http://##p' "$dir/$sn.out")
}

# replica_config N [TARGET-URL] writes replica N's config on $url.
replica_config() {
	f=$dir/replica$1.toml
	printf '[server]\nlisten = "127.0.0.1:0"\n\n[store]\nurl_env = "HOOKBOX_DATABASE_URL"\n\n[delivery]\nworkers = 16\n\n[[source]]\nname = "github"\nverify = "github"\nsecret = "%s"\n' "$secret" >"$f"
	[ -n "${2:-}" ] && printf '\n[[target]]\nname = "sink"\nsource = "github"\nurl = "%s"\n' "$2" >>"$f"
	echo "$f"
}
# replica N FD [TARGET-URL]: starts a hookbox bench-server as replica N,
# and sets addr.
replica() { HOOKBOX_DATABASE_URL=$url spawn "replica$1" "$2" "$bin" bench-server --kind hookbox --config "$(replica_config "$1" "${3:-}")"; }
# close_fds FD… closes the stdin of the programs spawned on each FD and
# waits for them to exit.
close_fds() {
	for fd in "$@"; do eval "exec $fd>&-"; done
	for fd in "$@"; do eval "wait \$pid_$fd" || true; done
}

wrk_at() { # LABEL ADDR IDS
	wrk -t"$threads" -c"$conns" -d"$duration" --latency -s "$here/github.lua" "http://$2/hooks/github" -- "$body" "$sig" "$3" >"$dir/wrk.out"
	grep -E 'Non-2xx|Socket errors' "$dir/wrk.out" >&2 && echo "$name: wrk had errors against $1 (above)" >&2
	awk -v label="$1" '
		/^Requests\/sec:/ { rps = $2 }
		$1 == "99%" { p99 = $2; if (p99 ~ /us$/) p99 = p99 / 1000; else if (p99 ~ /ms$/) p99 += 0; else if (p99 ~ /s$/) p99 *= 1000 }
		END { printf "%s %.0f %.2f\n", label, rps, p99 }' "$dir/wrk.out"
}

results=$dir/results; : >"$results"
trap 'drop_schemas; cleanup' EXIT
p=1
while [ "$p" -le "$pairs" ]; do
	if [ $((p % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
	for side in $order; do
		new_schema "$p$side"
		sinkurl=
		if [ "$mode" != drain ] && [ "$mode" != drainab ] && [ "${TARGET:-1}" = 1 ]; then
			spawn sink 8 "$bin" bench-server --kind bare; sinkurl=http://$addr/sink
		fi
		case $mode.$side in
		ingest.a) spawn ceiling 4 "$dir/ceiling" -url "$url" -deliveries="${TARGET:-1}"; wrk_at ceiling "$addr" "c$$-$p"; close_fds 4 ;;
		ingest.b) replica 0 4 "$sinkurl"; wrk_at hookbox "$addr" "h$$-$p"; close_fds 4 ;;
		ab.a) b=$bin; bin=${OLD:?set OLD to the old binary}; replica 0 4 "$sinkurl"; bin=$b; wrk_at old "$addr" "a$$-$p"; close_fds 4 ;;
		ab.b) replica 0 4 "$sinkurl"; wrk_at new "$addr" "b$$-$p"; close_fds 4 ;;
		replicas.a)
			replica 0 4 "$sinkurl"; spawn proxy 7 "$dir/rrproxy" "$addr"
			wrk_at one "$addr" "o$$-$p"; close_fds 7 4 ;;
		replicas.b)
			replica 0 4 "$sinkurl"; r0=$addr; replica 1 5 "$sinkurl"; r1=$addr; replica 2 6 "$sinkurl"
			spawn proxy 7 "$dir/rrproxy" "$r0" "$r1" "$addr"
			wrk_at three "$addr" "t$$-$p"; close_fds 7 4 5 6 ;;
		drain.* | drainab.*)
			n=${4:-20000}
			b=$bin
			[ "$mode.$side" = drainab.a ] && bin=${OLD:?set OLD to the old binary}
			spawn sink 8 "$bin" bench-server --kind bare; sink=$addr
			# The schema, then the backlog: N events, each with a pending delivery.
			replica 0 4; close_fds 4
			in_schema -c "INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size)
				SELECT 'github', 'd' || g, 'push', 0, 'application/json', '{}', convert_to(repeat('x', 1024), 'UTF8'), 1024 FROM generate_series(1, $n) g;
				INSERT INTO deliveries (event, target, status, run_at, created_at) SELECT id, 'sink', 'pending', 0, 0 FROM events; ANALYZE"
			t0=$(date +%s%N)
			if [ "$mode" = drainab ]; then label=old; [ "$side" = b ] && label=new; replica 0 4 "http://$sink/drain"; fds=4
			elif [ "$side" = a ]; then label=one; replica 0 4 "http://$sink/drain"; fds=4
			else label=two; replica 0 4 "http://$sink/drain"; replica 1 5 "http://$sink/drain"; fds="4 5"; fi
			until [ "$(in_schema -c "SELECT count(*) FROM deliveries WHERE status = 'done'")" -ge "$n" ]; do sleep 0.05; done
			t1=$(date +%s%N)
			close_fds $fds 8
			twice=$(in_schema -c "SELECT count(*) FROM deliveries WHERE attempts <> 1")
			att=$(in_schema -c "SELECT count(*) FROM attempts")
			bin=$b
			echo "$label $(awk -v n="$n" -v t="$((t1 - t0))" 'BEGIN { printf "%.0f", n / (t / 1e9) }') attempts=$att not-once=$twice"
			;;
		esac
		[ -n "$sinkurl" ] && close_fds 8
		drop_schemas
	done | sed "s/^/$p /" | tee -a "$results" >&2
	p=$((p + 1))
done
awk -v mode="$mode" '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ v[$2, $1] = $3; ps[$1] = 1; if ($2 == "two") bad += substr($5, 10) }
	END {
		if (mode == "ingest") { x = "hookbox"; y = "ceiling" } else if (mode == "ab" || mode == "drainab") { x = "new"; y = "old" } else if (mode == "replicas") { x = "three"; y = "one" } else { x = "two"; y = "one" }
		n = 0
		for (p in ps) { n++; r[n] = v[x, p] / v[y, p]; a[n] = v[x, p]; b[n] = v[y, p] }
		printf "median of %d pairs: %s %.0f/s, %s %.0f/s, %s / %s %.3f\n", n, y, median(b, n), x, median(a, n), x, y, median(r, n)
		if (mode == "drain") printf "deliveries not attempted exactly once, with two replicas: %d\n", bad
	}' "$results"
