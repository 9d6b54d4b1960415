package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Several serve replicas on one PostgreSQL schema, as the README's
// "Several machines" runs them: the built binary, each replica with the
// same config but its own listen address, behind a round-robin reverse
// proxy on 127.0.0.1, delivering to a command that logs each run's start
// and end.

// runLogScript is the command target: it appends "start", then "end" (or
// "term", when it is stopped with SIGTERM) with the event id, the replica,
// its pid and the time in nanoseconds to the log $1, sleeping $2 between.
const runLogScript = `#!/bin/sh
log="$1"
exec 2>>"$log.err"
line() { echo "$1 $HOOKBOX_EVENT_ID $HOOKBOX_REPLICA $$ $(date +%s%N)" >> "$log"; }
trap 'line term; exit 143' TERM
line start
sleep "$2" &
wait $!
line end
`

type cluster struct {
	t      *testing.T
	bin    string
	dbURL  string
	dir    string
	log    string // the command target's run log
	sleep  string
	lease  string
	poll   string
	procs  []*serveProc
	addrs  []string
	ids    []string // each replica's id, from its start log
	config []string
	conn   *pgx.Conn
}

// newCluster prepares n replicas' configs on a fresh schema; start starts
// them. Without HOOKBOX_TEST_POSTGRES it skips.
func newCluster(t *testing.T, n int, lease, poll, sleep string) *cluster {
	t.Helper()
	c := &cluster{t: t, dbURL: postgresSchema(t), bin: buildHookbox(t), dir: t.TempDir(), lease: lease, poll: poll, sleep: sleep}
	c.log = filepath.Join(c.dir, "runs.log")
	script := filepath.Join(c.dir, "run.sh")
	if err := os.WriteFile(script, []byte(runLogScript), 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := time.ParseDuration(lease)
	if err != nil {
		t.Fatal(err)
	}
	timeout := min(d/2, 10*time.Second).String() // under the lease, as check demands
	for i := range n {
		addr := freeAddr(t)
		cfg := filepath.Join(c.dir, fmt.Sprintf("replica%d.toml", i))
		writeFile(t, cfg, fmt.Sprintf(`[server]
listen = %q

[store]
url_env = "HOOKBOX_DATABASE_URL"

[delivery]
workers = 4
max_attempts = 10
backoff = "50ms"
max_backoff = "200ms"
lease = %q
poll = %q

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"

[[target]]
name = "log"
source = "shop"
command = ["/bin/sh", %q, %q, %q]
timeout = %q
`, addr, lease, poll, script, c.log, sleep, timeout))
		c.addrs, c.config = append(c.addrs, addr), append(c.config, cfg)
		c.procs, c.ids = append(c.procs, nil), append(c.ids, "")
	}
	return c
}

// start starts replica i (again) and waits until it answers.
func (c *cluster) start(i int) {
	c.t.Helper()
	out := &syncBuffer{}
	p := &serveProc{addr: c.addrs[i], output: out, exited: make(chan struct{})}
	p.cmd = exec.Command(c.bin, "serve", "--config", c.config[i], "--log-format", "json")
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HOOKBOX_DATABASE_URL=" + c.dbURL}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	c.t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	waitFor(c.t, 20*time.Second, "replica "+strconv.Itoa(i)+" to answer /healthz", func() bool {
		select {
		case <-p.exited:
			c.t.Fatalf("replica %d exited: %v\n%s", i, p.err, out.String())
		default:
		}
		resp, err := http.Get("http://" + c.addrs[i] + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	c.procs[i] = p
	c.ids[i] = logField(c.t, out.String(), "replica identity", "replica")
}

// logField is field of the first JSON log line with message msg.
func logField(t *testing.T, log, msg, field string) string {
	t.Helper()
	for line := range strings.SplitSeq(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["message"] == msg {
			if v, ok := m[field].(string); ok {
				return v
			}
		}
	}
	t.Fatalf("no log line %q with %s in:\n%s", msg, field, log)
	return ""
}

// kill SIGKILLs replica i and waits for it to be gone.
func (c *cluster) kill(i int) {
	c.t.Helper()
	c.procs[i].cmd.Process.Signal(syscall.SIGKILL)
	<-c.procs[i].exited
}

// proxy starts a round-robin reverse proxy over the replicas on
// 127.0.0.1 and returns its URL. A replica that does not answer gets the
// sender a 502, as a load balancer without health checks gives.
func (c *cluster) proxy() string {
	c.t.Helper()
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			addr := c.addrs[next.Add(1)%uint64(len(c.addrs))]
			r.SetURL(&url.URL{Scheme: "http", Host: addr})
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) },
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	go srv.Serve(ln)
	c.t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// postShop sends event id to base once, returning the status and the answer.
func postReplicaShop(client *http.Client, base, id string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/shop", strings.NewReader(`{"id":"`+id+`"}`))
	req.Header.Set("X-Id", id)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// query runs a read on the cluster's schema, on one connection the
// cluster keeps: call it from the test's goroutine, and close the rows.
func (c *cluster) query(sql string, args ...any) pgx.Rows {
	c.t.Helper()
	ctx := context.Background()
	if c.conn == nil {
		conn, err := pgx.Connect(ctx, c.dbURL)
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() { conn.Close(ctx) })
		c.conn = conn
	}
	rows, err := c.conn.Query(ctx, sql, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return rows
}

func (c *cluster) count(sql string, args ...any) int {
	c.t.Helper()
	rows := c.query(sql, args...)
	defer rows.Close()
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			c.t.Fatal(err)
		}
	}
	return n
}

// run is one run of the command target, from the log.
type run struct {
	event, replica, pid string
	start, end          int64 // ns; end 0 while it runs (or if it was SIGKILLed)
	ended               string
}

// runs reads the command target's log.
func (c *cluster) runs() []*run {
	c.t.Helper()
	f, err := os.Open(c.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	byPid := map[string]*run{}
	var out []*run
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			continue // a line being written
		}
		at, _ := strconv.ParseInt(f[4], 10, 64)
		switch f[0] {
		case "start":
			r := &run{event: f[1], replica: f[2], pid: f[3], start: at}
			byPid[f[3]] = r
			out = append(out, r)
		case "end", "term":
			if r := byPid[f[3]]; r != nil {
				r.end, r.ended = at, f[0]
			}
		}
	}
	return out
}

// byEvent groups runs by event id, each group in start order.
func byEvent(runs []*run) map[string][]*run {
	m := map[string][]*run{}
	for _, r := range runs {
		m[r.event] = append(m[r.event], r)
	}
	for _, rs := range m {
		slices.SortFunc(rs, func(a, b *run) int { return int(a.start - b.start) })
	}
	return m
}

// checkNeverTwiceAtOnce fails if two runs of one event overlap.
func checkNeverTwiceAtOnce(t *testing.T, runs []*run) {
	t.Helper()
	for ev, rs := range byEvent(runs) {
		for i := 1; i < len(rs); i++ {
			prev := rs[i-1]
			if prev.end == 0 || rs[i].start < prev.end {
				t.Errorf("event %s ran twice at once: %s (pid %s) from %d to %d (0: no end), and %s (pid %s) from %d",
					ev, prev.replica, prev.pid, prev.start, prev.end, rs[i].replica, rs[i].pid, rs[i].start)
			}
		}
	}
}

// 30 copies of one event sent at the same instant through the proxy, to
// three replicas: one is accepted, 29 are duplicates, one event is stored
// and the command runs once.
func TestReplicas_ConcurrentDuplicates(t *testing.T) {
	c := newCluster(t, 3, "1m", "1s", "0.1")
	for i := range 3 {
		c.start(i)
	}
	base := c.proxy()
	client := &http.Client{Timeout: 10 * time.Second}
	const n = 30
	var wg sync.WaitGroup
	answers := make([]string, n)
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			code, body := postReplicaShop(client, base, "evt_dup")
			answers[i] = fmt.Sprint(code, " ", body)
		}()
	}
	close(gate)
	wg.Wait()
	var accepted, duplicate int
	for _, a := range answers {
		switch {
		case strings.HasPrefix(a, "200 ") && strings.Contains(a, `"accepted"`):
			accepted++
		case strings.HasPrefix(a, "200 ") && strings.Contains(a, `"duplicate"`):
			duplicate++
		default:
			t.Errorf("answer %q, want 200 accepted or duplicate", a)
		}
	}
	if accepted != 1 || duplicate != n-1 {
		t.Fatalf("%d accepted, %d duplicate; want 1 and %d", accepted, duplicate, n-1)
	}
	if got := c.count(`SELECT count(*) FROM events WHERE event_id = 'evt_dup'`); got != 1 {
		t.Fatalf("%d stored events, want 1", got)
	}
	if got := c.count(`SELECT redeliveries FROM events WHERE event_id = 'evt_dup'`); got != n-1 {
		t.Fatalf("redeliveries %d, want %d", got, n-1)
	}
	waitFor(t, 20*time.Second, "the delivery to be done", func() bool {
		return c.count(`SELECT count(*) FROM deliveries WHERE status = 'done'`) == 1
	})
	time.Sleep(500 * time.Millisecond) // room for a second run, were there one
	if rs := c.runs(); len(rs) != 1 || rs[0].end == 0 {
		t.Fatalf("runs %+v, want one, finished", rs)
	}
}

// One replica of three is killed with SIGKILL under load, the one leading
// the sweeper: every event a replica acknowledged is delivered, no event
// ever runs twice at once, what the killed replica held runs again only
// once its lease has passed, and another replica takes the sweeper over
// within the leader lease and a third of it.
func TestReplicas_KillOneUnderLoad(t *testing.T) {
	c := newCluster(t, 3, "3s", "1s", "0.05")
	for i := range 3 {
		c.start(i)
	}
	base := c.proxy()
	var holder string
	waitFor(t, 20*time.Second, "a replica to lead the sweeper", func() bool {
		rows := c.query(`SELECT holder FROM leaders WHERE name = 'sweeper'`)
		defer rows.Close()
		for rows.Next() {
			rows.Scan(&holder)
		}
		return holder != ""
	})
	victim := slices.Index(c.ids, holder)
	if victim < 0 {
		t.Fatalf("the sweeper's leader %q is none of the replicas %v", holder, c.ids)
	}

	// Senders retry whatever was not a 200, as providers do.
	const events = 240
	client := &http.Client{Timeout: 10 * time.Second}
	var mu sync.Mutex
	acked := map[string]bool{}
	ids := make(chan string, events)
	for i := range events {
		ids <- fmt.Sprintf("evt_%03d", i)
	}
	close(ids)
	var wg sync.WaitGroup
	var sent atomic.Int32
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				for try := 0; try < 50; try++ {
					if code, _ := postReplicaShop(client, base, id); code == http.StatusOK {
						mu.Lock()
						acked[id] = true
						mu.Unlock()
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				sent.Add(1)
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	waitFor(t, 30*time.Second, "a third of the events to be sent", func() bool { return sent.Load() >= events/3 })
	c.kill(victim)
	killedAt := time.Now()
	type held struct {
		event string
		until int64 // lease expiry, unix ms
	}
	var leftovers []held
	rows := c.query(`SELECT e.event_id, d.run_at FROM deliveries d JOIN events e ON e.id = d.event
		WHERE d.status = 'running' AND d.replica = $1`, holder)
	for rows.Next() {
		var h held
		if err := rows.Scan(&h.event, &h.until); err != nil {
			t.Fatal(err)
		}
		leftovers = append(leftovers, h)
	}
	rows.Close()
	wg.Wait()

	mu.Lock()
	n := len(acked)
	mu.Unlock()
	if n != events {
		t.Errorf("%d of %d events acknowledged after retries, want all", n, events)
	}
	waitFor(t, 60*time.Second, "every acknowledged event's delivery to be done", func() bool {
		return c.count(`SELECT count(*) FROM deliveries WHERE status = 'done'`) == n
	})
	if got := c.count(`SELECT count(*) FROM deliveries WHERE status <> 'done'`); got != 0 {
		t.Errorf("%d deliveries not done, want 0", got)
	}
	runs := c.runs()
	ran := byEvent(runs)
	for id := range acked {
		if !slices.ContainsFunc(ran[id], func(r *run) bool { return r.ended == "end" }) {
			t.Errorf("acknowledged event %s never ran to its end", id)
		}
	}
	checkNeverTwiceAtOnce(t, runs)
	if len(leftovers) == 0 {
		t.Log("the killed replica held no delivery at its death")
	}
	for _, h := range leftovers {
		for _, r := range ran[h.event] {
			if r.replica != holder && r.start < h.until*1e6 {
				t.Errorf("event %s, held by the killed replica until %d ms, ran again at %s at %d ns: before its lease passed",
					h.event, h.until, r.replica, r.start)
			}
		}
	}
	// The leader lease passes to a live replica: within the lease (15 s)
	// and a third of it for the next try, plus room for a loaded machine.
	var next string
	waitFor(t, 30*time.Second, "another replica to lead the sweeper", func() bool {
		rows := c.query(`SELECT holder FROM leaders WHERE name = 'sweeper'`)
		defer rows.Close()
		for rows.Next() {
			rows.Scan(&next)
		}
		return next != "" && next != holder
	})
	i := slices.Index(c.ids, next)
	if i < 0 || i == victim {
		t.Fatalf("new leader %q is not a live replica (%v, killed %d)", next, c.ids, victim)
	}
	waitFor(t, 10*time.Second, "the new leader to log that it leads", func() bool {
		return strings.Contains(c.procs[i].output.String(), `"lease":"sweeper"`) &&
			strings.Contains(c.procs[i].output.String(), "leading: running this lease's work here")
	})
	t.Logf("sweeper taken over %v after the kill; %d leftovers waited for their lease", time.Since(killedAt).Round(time.Second), len(leftovers))
}

// A replica starting while another runs commands leaves them alone: it
// neither stops them nor runs their deliveries again. A killed replica's
// own restart takes its leftovers back at once, long before their lease,
// stopping its predecessor's commands first, so no event runs twice at
// once.
func TestReplicas_StartLeavesLiveWork_RestartTakesOwnBack(t *testing.T) {
	c := newCluster(t, 2, "10m", "1s", "3")
	c.start(0)
	client := &http.Client{Timeout: 10 * time.Second}
	base0 := "http://" + c.addrs[0]
	for _, id := range []string{"evt_a1", "evt_a2"} {
		if code, body := postReplicaShop(client, base0, id); code != http.StatusOK {
			t.Fatalf("post %s: %d %s", id, code, body)
		}
	}
	waitFor(t, 10*time.Second, "both commands to start", func() bool { return len(c.runs()) == 2 })
	c.start(1) // while replica 0's commands run
	waitFor(t, 20*time.Second, "both deliveries to be done", func() bool {
		return c.count(`SELECT count(*) FROM deliveries WHERE status = 'done'`) == 2
	})
	for _, r := range c.runs() {
		if r.replica != c.ids[0] || r.ended != "end" {
			t.Fatalf("run %+v: want each run by replica 0 (%s), to its end (not stopped by replica 1)", r, c.ids[0])
		}
	}
	if n := len(c.runs()); n != 2 {
		t.Fatalf("%d runs, want 2: replica 1 ran a live replica's delivery again", n)
	}

	c.procs[1].stop(t, syscall.SIGTERM, 20*time.Second)
	for _, id := range []string{"evt_b1", "evt_b2"} {
		if code, body := postReplicaShop(client, base0, id); code != http.StatusOK {
			t.Fatalf("post %s: %d %s", id, code, body)
		}
	}
	waitFor(t, 10*time.Second, "the new commands to start", func() bool { return len(c.runs()) == 4 })
	c.kill(0)
	killed := c.ids[0]
	c.start(0)
	waitFor(t, 30*time.Second, "the restarted replica to run its leftovers (their lease is 10m)", func() bool {
		return c.count(`SELECT count(*) FROM deliveries WHERE status = 'done'`) == 4
	})
	runs := c.runs()
	checkNeverTwiceAtOnce(t, runs)
	for _, id := range []string{"evt_b1", "evt_b2"} {
		rs := byEvent(runs)[id]
		if len(rs) != 2 || rs[0].replica != killed || rs[0].ended != "term" || rs[1].replica != c.ids[0] || rs[1].ended != "end" {
			t.Errorf("runs of %s: %+v %+v; want the killed replica's stopped (term), then the restarted one's to its end", id, rs[0], rs[len(rs)-1])
		}
	}
	if t.Failed() {
		e, _ := os.ReadFile(c.log + ".err")
		t.Logf("the commands' stderr:\n%s\nthe restarted replica's log:\n%s", e, c.procs[0].output.String())
	}
}

// With the poll an hour long, work queued elsewhere is still run at once:
// a replay from the command line wakes the replicas by NOTIFY.
func TestReplicas_NotifyWakesPools(t *testing.T) {
	c := newCluster(t, 2, "1m", "1h", "0")
	c.start(0)
	c.start(1)
	client := &http.Client{Timeout: 10 * time.Second}
	if code, body := postReplicaShop(client, "http://"+c.addrs[0], "evt_w"); code != http.StatusOK {
		t.Fatalf("post: %d %s", code, body)
	}
	waitFor(t, 20*time.Second, "the first run", func() bool { return len(c.runs()) == 1 && c.runs()[0].end != 0 })
	getenv := func(k string) string {
		if k == "HOOKBOX_DATABASE_URL" {
			return c.dbURL
		}
		return ""
	}
	waitFor(t, 10*time.Second, "the delivery to be done", func() bool {
		return c.count(`SELECT count(*) FROM deliveries WHERE status = 'done'`) == 1
	})
	if _, stderr, err := execute([]string{"replay", "--config", c.config[0], "1"}, getenv); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	waitFor(t, 20*time.Second, "the replayed delivery to run (the poll is 1h)", func() bool { return len(c.runs()) == 2 })
}
