package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// laneHit is one request a laneTarget answered 2xx.
type laneHit struct {
	EventID string
	Key     string
	Version int
	Body    string
}

// laneTarget is a URL target that reads each delivery's resource key and
// version from its JSON body ({"key":…, "v":…}, or Stripe's data.object.id
// and created), records the ones it accepts, and counts how many
// deliveries of one key it holds at once: an ordered target must never
// see two. Down makes it answer 503; Fail(key) answers 503 for that key;
// Delay holds each request (until the client goes away).
type laneTarget struct {
	*httptest.Server
	Delay time.Duration
	down  atomic.Bool
	Fail  func(key string) bool

	mu       sync.Mutex
	hits     []laneHit
	inflight map[string]int
	overlap  []string // keys seen twice at once
	requests int
}

func newLaneTarget(tb testing.TB) *laneTarget {
	tb.Helper()
	lt := &laneTarget{inflight: map[string]int{}}
	lt.Server = httptest.NewServer(http.HandlerFunc(lt.serve))
	tb.Cleanup(lt.Close)
	return lt
}

func (lt *laneTarget) serve(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	body.ReadFrom(r.Body)
	var doc struct {
		Key     string `json:"key"`
		V       int    `json:"v"`
		Created int    `json:"created"`
		Data    struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	json.Unmarshal(body.Bytes(), &doc)
	key, v := doc.Key, doc.V
	if key == "" {
		key, v = doc.Data.Object.ID, doc.Created
	}
	lt.mu.Lock()
	lt.requests++
	lt.inflight[key]++
	if lt.inflight[key] > 1 {
		lt.overlap = append(lt.overlap, key)
	}
	lt.mu.Unlock()
	defer func() {
		lt.mu.Lock()
		lt.inflight[key]--
		lt.mu.Unlock()
	}()
	if lt.Delay > 0 {
		select {
		case <-time.After(lt.Delay):
		case <-r.Context().Done(): // the sender is gone (killed): so is this delivery
			return
		}
	}
	if lt.down.Load() || (lt.Fail != nil && lt.Fail(key)) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	lt.mu.Lock()
	lt.hits = append(lt.hits, laneHit{EventID: r.Header.Get("Hookbox-Event-Id"), Key: key, Version: v, Body: body.String()})
	lt.mu.Unlock()
}

func (lt *laneTarget) Hits() []laneHit {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return slices.Clone(lt.hits)
}

func (lt *laneTarget) Overlaps() []string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return slices.Clone(lt.overlap)
}

// versionsByKey is the versions each key's accepted deliveries carried,
// in the order the target accepted them.
func versionsByKey(hits []laneHit) map[string][]int {
	out := map[string][]int{}
	for _, h := range hits {
		out[h.Key] = append(out[h.Key], h.Version)
	}
	return out
}

// resourceSource is a source whose events name their resource and its
// version in the JSON body.
const resourceSource = `
[[source]]
name = "res"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"
order_key = "json:key"
order_version = "json:v"
`

func laneDelivery(workers int, backoff string) string {
	return fmt.Sprintf("[delivery]\nworkers = %d\nmax_attempts = 1000\nbackoff = %q\nmax_backoff = %q\nlease = \"1m\"\n", workers, backoff, backoff)
}

func laneTargetConfig(name, order, url string) string {
	return fmt.Sprintf("\n[[target]]\nname = %q\nsource = \"res\"\nurl = %q\norder = %q\n", name, url, order)
}

// update is one event about a resource: its id, key and version.
type update struct {
	ID  string
	Key string
	V   int
}

func (u update) body() []byte { return fmt.Appendf(nil, `{"key":%q,"v":%d}`, u.Key, u.V) }

// send posts u to url's /hooks/res and fails the test unless it is
// accepted or a duplicate.
func (u update) send(tb testing.TB, base string) {
	tb.Helper()
	code, body, err := post(base+"/hooks/res", map[string]string{"X-Id": u.ID, "X-Type": "resource.updated", "Content-Type": "application/json"}, u.body())
	if err != nil || code != http.StatusOK {
		tb.Errorf("post %s: %d %s %v", u.ID, code, body, err)
	}
}

// updates is n versions of each of keys resources, shuffled.
func updates(keys, n int, seed uint64) []update {
	var out []update
	for k := range keys {
		for v := 1; v <= n; v++ {
			out = append(out, update{ID: fmt.Sprintf("u-%d-%d", k, v), Key: fmt.Sprintf("res_%02d", k), V: v})
		}
	}
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// sendAll posts every update from par goroutines, each waiting a random
// moment (up to maxDelay) before each post.
func sendAll(tb testing.TB, base string, ups []update, par int, maxDelay time.Duration) {
	tb.Helper()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for g := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ups) {
					return
				}
				if maxDelay > 0 {
					time.Sleep(time.Duration(r.Int64N(int64(maxDelay))))
				}
				ups[i].send(tb, base)
			}
		}()
	}
	wg.Wait()
}

// 1,000 updates of 50 resources arrive out of order, with random delays.
// A fifo target that was down meanwhile then gets each resource's updates
// in version order; a latest target, up all along, never gets an older
// version after a newer one, and ends with every resource's newest.
func TestOrder_OutOfOrderStream(t *testing.T) {
	fifo, latest := newLaneTarget(t), newLaneTarget(t)
	fifo.down.Store(true)
	tm := MustRunMain(t, laneDelivery(8, "200ms")+resourceSource+
		laneTargetConfig("fifo", "fifo", fifo.URL)+laneTargetConfig("latest", "latest", latest.URL), "")
	ups := updates(50, 20, 1)
	sendAll(t, tm.URL, ups, 8, 4*time.Millisecond)
	fifo.down.Store(false)

	waitFor(t, 60*time.Second, "the fifo target to get all 1,000 updates", func() bool { return len(fifo.Hits()) >= len(ups) })
	waitFor(t, 30*time.Second, "the latest target to get every resource's newest version", func() bool {
		byKey := versionsByKey(latest.Hits())
		if len(byKey) < 50 {
			return false
		}
		for _, vs := range byKey {
			if vs[len(vs)-1] != 20 {
				return false
			}
		}
		return true
	})
	for key, vs := range versionsByKey(fifo.Hits()) {
		if !slices.IsSorted(vs) || len(vs) != 20 {
			t.Errorf("fifo target got %s versions %v, want 1 to 20 in order", key, vs)
		}
	}
	for key, vs := range versionsByKey(latest.Hits()) {
		for i := 1; i < len(vs); i++ {
			if vs[i] <= vs[i-1] {
				t.Errorf("latest target got %s version %d after %d: %v", key, vs[i], vs[i-1], vs)
				break
			}
		}
	}
	if o := append(fifo.Overlaps(), latest.Overlaps()...); len(o) > 0 {
		t.Errorf("deliveries of one resource ran at once: %v", o)
	}
	// Every update the latest target did not get is skipped as stale.
	out := cliRun(t, tm.Dir, "events", "--limit", "0", "--json")
	skipped := strings.Count(out, `"reason":"stale`)
	if got := len(latest.Hits()) + skipped; got != len(ups) {
		t.Errorf("latest target: %d delivered + %d skipped stale = %d, want %d", len(latest.Hits()), skipped, got, len(ups))
	}
}

// A lane whose head keeps failing holds only itself: the target's other
// resources are delivered meanwhile, and `hookbox lanes --blocked` shows
// the stuck one.
func TestOrder_StuckLaneHoldsOnlyItself(t *testing.T) {
	target := newLaneTarget(t)
	target.Fail = func(key string) bool { return key == "stuck" }
	tm := MustRunMain(t, laneDelivery(2, "100ms")+resourceSource+laneTargetConfig("billing", "fifo", target.URL), "")
	update{ID: "s1", Key: "stuck", V: 1}.send(t, tm.URL)
	update{ID: "s2", Key: "stuck", V: 2}.send(t, tm.URL)
	var others []update
	for i := range 100 {
		others = append(others, update{ID: fmt.Sprintf("o%d", i), Key: fmt.Sprintf("ok_%d", i%20), V: i})
	}
	sendAll(t, tm.URL, others, 4, 0)
	waitFor(t, 30*time.Second, "the other resources' 100 updates", func() bool { return len(target.Hits()) >= 100 })
	for _, h := range target.Hits() {
		if h.Key == "stuck" {
			t.Fatal("the stuck resource's update was accepted")
		}
	}
	out := cliRun(t, tm.Dir, "lanes", "--blocked", "--json")
	lanes := jsonLines[map[string]any](t, out)
	if len(lanes) != 1 || lanes[0]["key"] != "stuck" || lanes[0]["queued"] != float64(1) || lanes[0]["blocked_since"] == "" {
		t.Fatalf("lanes --blocked: %s, want the stuck lane, 1 queued, blocked since its first failure", out)
	}
	table := cliRun(t, tm.Dir, "lanes", "--target", "billing")
	if !strings.Contains(table, "stuck") || !strings.Contains(table, "BLOCKED SINCE") || strings.Count(table, "\n") != 22 {
		t.Fatalf("lanes table:\n%s\nwant a header and 21 lanes", table)
	}
}

// 30 updates of one resource, each sent twice, all at once: the target
// never holds two deliveries of the resource at a time, and gets each
// update once.
func TestOrder_OneLaneOneAtATime(t *testing.T) {
	target := newLaneTarget(t)
	target.Delay = 5 * time.Millisecond
	tm := MustRunMain(t, laneDelivery(16, "50ms")+resourceSource+laneTargetConfig("billing", "fifo", target.URL), "")
	var ups []update
	for v := 1; v <= 30; v++ {
		u := update{ID: fmt.Sprintf("dup-%d", v), Key: "hot", V: v}
		ups = append(ups, u, u)
	}
	sendAll(t, tm.URL, ups, 60, 0)
	waitFor(t, 30*time.Second, "30 deliveries", func() bool { return len(target.Hits()) >= 30 })
	time.Sleep(100 * time.Millisecond) // room for a wrong extra one
	if n := len(target.Hits()); n != 30 {
		t.Fatalf("target got %d deliveries, want 30", n)
	}
	if o := target.Overlaps(); len(o) > 0 {
		t.Fatalf("%d deliveries of one resource overlapped", len(o))
	}
}

// The seed's case, as a provider causes it, through the binary users run:
// "approved" (older) cannot reach hookbox at first, so the provider sends
// it again later; "refunded" (newer) arrives and is delivered meanwhile.
func TestOrder_SeedCase(t *testing.T) {
	const secret = "whsec_seedcase"
	bin := buildHookbox(t)
	approved := []byte(`{"id":"evt_approved","type":"charge.succeeded","created":1700000001,"data":{"object":{"id":"ch_1","status":"succeeded"}}}`)
	refunded := []byte(`{"id":"evt_refunded","type":"charge.refunded","created":1700000002,"data":{"object":{"id":"ch_1","status":"refunded"}}}`)
	sendStripe := func(tb testing.TB, addr string, body []byte) (int, error) {
		code, _, err := post("http://"+addr+"/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig(secret, time.Now(), body), "Content-Type": "application/json"}, body)
		return code, err
	}
	start := func(t *testing.T, order, url string) (string, string) {
		dir := t.TempDir()
		addr := freeAddr(t)
		cfg := filepath.Join(dir, "hookbox.toml")
		writeFile(t, cfg, fmt.Sprintf(`[server]
listen = %q
[store]
path = %q
[delivery]
backoff = "300ms"
max_backoff = "300ms"
max_attempts = 100
[[source]]
name = "stripe"
verify = "stripe"
secret = %q
[[target]]
name = "orders"
source = "stripe"
url = %q
order = %q
`, addr, filepath.Join(dir, "hookbox.db"), secret, url, order))
		startServe(t, bin, cfg, addr)
		return addr, cfg
	}
	status := func(t *testing.T, cfg, eventID string) (string, string) {
		out, _, err := runCLI(t, "events", "--config", cfg, "--key", "ch_1", "--json")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range jsonLines[map[string]any](t, out) {
			if e["event_id"] == eventID {
				if e["order_key"] != "ch_1" || e["order_version"] == nil {
					t.Fatalf("event line %v lacks order_key ch_1 and its order_version", e)
				}
				d := e["deliveries"].([]any)[0].(map[string]any)
				reason, _ := d["reason"].(string)
				return d["status"].(string), reason
			}
		}
		return "", ""
	}

	t.Run("latest", func(t *testing.T) {
		target := newLaneTarget(t)
		addr, cfg := start(t, "latest", target.URL)
		// The provider's first send of approved fails: hookbox cannot be
		// reached (a network fault: the address answers nothing).
		if _, err := sendStripe(t, freeAddr(t), approved); err == nil {
			t.Fatal("the send to an address where nothing listens succeeded")
		}
		if code, err := sendStripe(t, addr, refunded); err != nil || code != 200 {
			t.Fatalf("refunded: %d %v", code, err)
		}
		waitFor(t, 10*time.Second, "refunded delivered", func() bool { return len(target.Hits()) == 1 })
		// The provider's retry of approved, later.
		if code, err := sendStripe(t, addr, approved); err != nil || code != 200 {
			t.Fatalf("approved, resent: %d %v", code, err)
		}
		waitFor(t, 10*time.Second, "approved skipped", func() bool { s, _ := status(t, cfg, "evt_approved"); return s == "skipped" })
		_, reason := status(t, cfg, "evt_approved")
		if !strings.HasPrefix(reason, "stale: version 1700000002") {
			t.Fatalf("approved's reason %q, want stale naming version 1700000002", reason)
		}
		hits := target.Hits()
		if len(hits) != 1 || !strings.Contains(hits[0].Body, `"refunded"`) {
			t.Fatalf("target got %d deliveries (%v), want refunded only", len(hits), hits)
		}
		out, _, err := runCLI(t, "event", "--config", cfg, "2")
		if err != nil || !strings.Contains(out, "order key:    ch_1") || !strings.Contains(out, "version:      1700000001") ||
			!strings.Contains(out, "orders: skipped after 0 attempt(s) (stale: version 1700000002 was delivered (event #1))") {
			t.Fatalf("hookbox event 2:\n%s%v", out, err)
		}
	})

	t.Run("fifo", func(t *testing.T) {
		target := newLaneTarget(t)
		target.down.Store(true) // the target is down: both wait in the lane
		addr, cfg := start(t, "fifo", target.URL)
		if code, err := sendStripe(t, addr, refunded); err != nil || code != 200 {
			t.Fatalf("refunded: %d %v", code, err)
		}
		waitFor(t, 10*time.Second, "refunded retrying", func() bool { s, _ := status(t, cfg, "evt_refunded"); return s == "retrying" })
		if code, err := sendStripe(t, addr, approved); err != nil || code != 200 {
			t.Fatalf("approved: %d %v", code, err)
		}
		out, _, _ := runCLI(t, "lanes", "--config", cfg, "--json")
		if !strings.Contains(out, `"key":"ch_1"`) || !strings.Contains(out, `"queued":1`) {
			t.Fatalf("lanes while the target is down: %s, want ch_1 with one queued behind its head", out)
		}
		target.down.Store(false)
		waitFor(t, 10*time.Second, "both delivered", func() bool { return len(target.Hits()) == 2 })
		hits := target.Hits()
		if hits[0].EventID != "evt_approved" || hits[1].EventID != "evt_refunded" {
			t.Fatalf("target got %s then %s, want approved then refunded (version order)", hits[0].EventID, hits[1].EventID)
		}
	})
}

// kill -9 while a lane has deliveries running and waiting: after the
// restart, the lane goes on from where it was, one delivery at a time,
// in version order.
func TestOrder_KillNineMidLane(t *testing.T) {
	bin := buildHookbox(t)
	target := newLaneTarget(t)
	target.Delay = 100 * time.Millisecond
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf("[server]\nlisten = %q\n[store]\npath = %q\n", addr, filepath.Join(dir, "hookbox.db"))+
		laneDelivery(4, "50ms")+resourceSource+laneTargetConfig("billing", "fifo", target.URL))
	p := startServe(t, bin, cfg, addr)
	var ups []update
	for v := 1; v <= 12; v++ {
		ups = append(ups, update{ID: fmt.Sprintf("k9-%d", v), Key: "one", V: v})
	}
	sendAll(t, "http://"+addr, ups, 1, 0)
	waitFor(t, 10*time.Second, "three deliveries", func() bool { return len(target.Hits()) >= 3 })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	startServe(t, bin, cfg, addr)
	waitFor(t, 30*time.Second, "all 12 versions", func() bool {
		seen := map[int]bool{}
		for _, h := range target.Hits() {
			seen[h.Version] = true
		}
		return len(seen) == 12
	})
	vs := versionsByKey(target.Hits())["one"]
	for i := 1; i < len(vs); i++ {
		// The attempt the kill interrupted may be delivered again (at
		// least once); never an older one after a newer.
		if vs[i] < vs[i-1] {
			t.Fatalf("versions %v: %d after %d", vs, vs[i], vs[i-1])
		}
	}
	if o := target.Overlaps(); len(o) > 0 {
		t.Fatalf("deliveries of the lane overlapped across the restart: %v", o)
	}
}

// Three serve processes on one PostgreSQL database, each receiving a share
// of 300 updates of 10 resources: the target never holds two deliveries
// of one resource at once, and gets every update.
func TestOrder_PostgresThreeServes(t *testing.T) {
	dbURL := postgresSchema(t)
	bin := buildHookbox(t)
	target := newLaneTarget(t)
	target.Delay = 2 * time.Millisecond
	var addrs []string
	var procs []*serveProc
	for range 3 {
		dir := t.TempDir()
		addr := freeAddr(t)
		cfg := filepath.Join(dir, "hookbox.toml")
		writeFile(t, cfg, fmt.Sprintf("[server]\nlisten = %q\n[store]\nurl_env = \"HOOKBOX_DATABASE_URL\"\n", addr)+
			laneDelivery(8, "50ms")+resourceSource+laneTargetConfig("billing", "fifo", target.URL))
		out := &syncBuffer{}
		procs = append(procs, launchServeEnv(t, addr, out, []string{"HOOKBOX_DATABASE_URL=" + dbURL}, bin, "serve", "--config", cfg, "--log-format", "json"))
		addrs = append(addrs, addr)
	}
	ups := updates(10, 30, 3)
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []update
			for j := i; j < len(ups); j += len(addrs) {
				mine = append(mine, ups[j])
			}
			sendAll(t, "http://"+addr, mine, 4, time.Millisecond)
		}()
	}
	wg.Wait()
	waitFor(t, 60*time.Second, "300 deliveries", func() bool { return len(target.Hits()) >= len(ups) })
	if o := target.Overlaps(); len(o) > 0 {
		t.Fatalf("two replicas ran deliveries of one resource at once (%d times: %v)", len(o), o[:min(len(o), 5)])
	}
	seen := map[string]int{}
	for _, h := range target.Hits() {
		seen[h.EventID]++
	}
	for _, u := range ups {
		if seen[u.ID] != 1 {
			t.Errorf("update %s delivered %d times, want 1", u.ID, seen[u.ID])
		}
	}
	// Stopped as an operator stops them, their transactions ended, before
	// the schema goes.
	for _, p := range procs {
		p.stop(t, syscall.SIGTERM, 15*time.Second)
		// Lanes are locked in one order by every transaction: none waits
		// for another in a cycle.
		if out := p.output.String(); strings.Contains(out, "40P01") {
			t.Errorf("a serve met a deadlock:\n%s", out)
		}
	}
}

// A version that is neither a number nor an RFC 3339 time is logged and
// kept as found, and orders by receipt; an event without a key has no
// lane and is delivered as it comes.
func TestOrder_UnreadableVersionAndNoKey(t *testing.T) {
	target := newLaneTarget(t)
	tm := MustRunMain(t, laneDelivery(2, "100ms")+resourceSource+laneTargetConfig("billing", "latest", target.URL), "")
	for _, b := range []struct{ id, body string }{
		{"e1", `{"key":"k","v":"soon"}`},
		{"e2", `{"key":"k","v":"2026-12-01T10:00:00Z"}`},
		{"e3", `{"v":3}`},
	} {
		if code, body, err := post(tm.URL+"/hooks/res", map[string]string{"X-Id": b.id, "X-Type": "t"}, []byte(b.body)); err != nil || code != 200 {
			t.Fatalf("post %s: %d %s %v", b.id, code, body, err)
		}
	}
	waitFor(t, 10*time.Second, "3 deliveries", func() bool { return len(target.Hits()) == 3 })
	if !strings.Contains(tm.Logs.String(), "is neither a number nor an RFC 3339 time: ordered by receipt") {
		t.Errorf("no warning about the unreadable version in the log:\n%s", tm.Logs.String())
	}
	out := cliRun(t, tm.Dir, "event", "1")
	if !strings.Contains(out, "version:      soon (neither a number nor an RFC 3339 time: ordered by receipt)") {
		t.Errorf("hookbox event 1:\n%s\nwant the unreadable version shown", out)
	}
	lines := jsonLines[map[string]any](t, cliRun(t, tm.Dir, "events", "--json"))
	for _, l := range lines {
		_, hasKey := l["order_key"]
		if want := l["event_id"] != "e3"; hasKey != want {
			t.Errorf("event %v: order_key present %v, want %v", l["event_id"], hasKey, want)
		}
	}
	if got := cliRun(t, tm.Dir, "events", "--key", "k"); strings.Count(got, "\n") != 3 {
		t.Errorf("events --key k:\n%s\nwant a header and 2 events", got)
	}
}
