# servers.sh: what bench/wrk.sh and bench/ab.sh share, sourced by both:
# the request (body, secret, signature), a temporary directory removed at
# exit, bench servers that stop when their stdin closes, and a wrk run
# against one of them. The caller sets "name" (its own, for messages)
# before sourcing it.

here=$(cd "$(dirname "$0")" && pwd)
body=$here/testdata/push-1024.json
secret=hookbox-bench-secret
threads=${THREADS:-2}
command -v wrk >/dev/null || { echo "$name: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "$name: openssl is not installed" >&2; exit 1; }
sig=$(openssl dgst -sha256 -hmac "$secret" -r "$body" | cut -d' ' -f1)
dir=$(mktemp -d "${TMPDIR:-/tmp}/hookbox-bench-XXXXXX")
pid=
cleanup() {
	exec 3>&- 2>/dev/null || true
	[ -n "$pid" ] && wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# hookbox_config SUBDIR writes a config for a hookbox on a new store in
# $dir/SUBDIR, with the bench's source and secret, and prints its path.
hookbox_config() {
	mkdir -p "$dir/$1"
	printf '[server]\nlisten = "127.0.0.1:0"\n\n[store]\npath = "%s"\n\n[[source]]\nname = "github"\nverify = "github"\nsecret = "%s"\n' \
		"$dir/$1/hookbox.db" "$secret" >"$dir/$1/hookbox.toml"
	echo "$dir/$1/hookbox.toml"
}

# start BINARY KIND [CONFIG] runs BINARY's bench server of KIND (bare, or
# hookbox with CONFIG), which stops when its stdin (fd 3 here) closes, and
# sets addr.
start() {
	rm -f "$dir/in" "$dir/out"
	mkfifo "$dir/in"
	if [ "$2" = hookbox ]; then
		"$1" bench-server --kind hookbox --config "$3" <"$dir/in" >"$dir/out" 2>>"$dir/err" &
	else
		"$1" bench-server --kind bare <"$dir/in" >"$dir/out" 2>>"$dir/err" &
	fi
	pid=$!
	exec 3>"$dir/in"
	i=0
	until grep -q '^listening on http://' "$dir/out" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 1200 ] || ! kill -0 "$pid" 2>/dev/null; then
			echo "$name: the $2 server did not start:" >&2
			cat "$dir/err" >&2
			exit 1
		fi
		sleep 0.05
	done
	addr=$(sed -n 's#^listening on http://##p' "$dir/out")
}

stop() {
	exec 3>&-
	wait "$pid"
	pid=
}

# wrk_load LABEL IDS loads the started server with wrk (ids start with
# IDS), stops it, and prints "LABEL REQ/S P99-MS".
wrk_load() {
	wrk -t"$threads" -c"$conns" -d"$duration" --latency -s "$here/github.lua" \
		"http://$addr/hooks/github" -- "$body" "$sig" "$2" >"$dir/wrk.out"
	stop
	if grep -E 'Non-2xx|Socket errors' "$dir/wrk.out" >&2; then
		echo "$name: wrk had errors against $1 (above)" >&2
	fi
	awk -v label="$1" '
		/^Requests\/sec:/ { rps = $2 }
		$1 == "99%" { p99 = $2; if (p99 ~ /us$/) p99 = p99 / 1000; else if (p99 ~ /ms$/) p99 += 0; else if (p99 ~ /s$/) p99 *= 1000 }
		END { printf "%s %.0f %.2f\n", label, rps, p99 }' "$dir/wrk.out"
}
