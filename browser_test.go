package main_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"hookbox/queue"
	"hookbox/web"
)

// chromium is the browser the UI tests drive: $HOOKBOX_CHROMIUM, else
// Debian's chromium. Without one the tests skip, unless
// HOOKBOX_TEST_BROWSER is set (CI), where they fail.
func chromium(tb testing.TB) string {
	tb.Helper()
	for _, p := range []string{os.Getenv("HOOKBOX_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	if os.Getenv("HOOKBOX_TEST_BROWSER") != "" {
		tb.Fatal("HOOKBOX_TEST_BROWSER is set but no Chromium was found: apt-get install -y chromium, or set HOOKBOX_CHROMIUM")
	}
	tb.Skip("browser tests skipped: no Chromium (apt-get install -y chromium, or set HOOKBOX_CHROMIUM=/path/to/chromium)")
	return ""
}

// browser starts a headless Chromium with a profile of its own and
// returns a tab's context, closed when the test ends.
func browser(tb testing.TB, width, height int) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(tb)),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	tb.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		tb.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func do(tb testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.Fatal(err)
	}
}

func text(tb testing.TB, ctx context.Context, sel string) string {
	tb.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		tb.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func eval[T any](tb testing.TB, ctx context.Context, js string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS waits until the expression is true in the page.
func waitJS(tb testing.TB, ctx context.Context, what, js string) {
	tb.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		tb.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// The UI in a real browser over a running hookbox: what a person sees
// and does.
func TestBrowser(t *testing.T) {
	ws := startWeb(t)
	ctx := browser(t, 1280, 900)
	first := ws.shop(t, "ord_1001", "orders/create", `{"id":1001,"total":"12.50","lines":[{"sku":"A-1","qty":2}]}`, "X-Shop-Domain", "demo.example")
	ws.waitStatus(t, first, queue.Done)

	t.Run("Live tail", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(ws.UI+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
		id := ws.shop(t, "ord_live", "orders/paid", `{"id":"live"}`)
		row := fmt.Sprintf(`#events tbody tr[data-id="%d"]`, id)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(row)))
		if got := text(t, ctx, row); !strings.Contains(got, "ord_live") || !strings.Contains(got, "orders/paid") {
			t.Errorf("the new row says %q, want ord_live orders/paid", got)
		}
		if n := eval[int](t, ctx, `document.querySelector("#events tbody").rows.length`); n != 2 {
			t.Errorf("%d rows, want 2 (the first event and the live one)", n)
		}
		// The row follows its delivery to done without a reload.
		waitJS(t, ctx, "the live row to show its delivery done", `(document.querySelector(`+strconv.Quote(row)+`)||{}).textContent.includes("web: done")`)
	})

	t.Run("Live tail keeps a window", func(t *testing.T) {
		// A handler keeping 3 rows: a burst of events leaves the newest 3.
		h := web.New(ws.Store, web.Options{Window: 3, TailEvery: 50 * time.Millisecond})
		small := httptest.NewServer(h)
		defer func() { h.Shutdown(); small.Close() }()
		do(t, ctx, chromedp.Navigate(small.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
		var last int64
		for i := range 10 {
			last = ws.shop(t, fmt.Sprintf("burst_%d", i), "burst", `{}`)
		}
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-id="%d"]`, last))))
		if n := eval[int](t, ctx, `document.querySelector("#events tbody").rows.length`); n != 3 {
			t.Errorf("%d rows after a burst of 10, want the window of 3", n)
		}
	})

	t.Run("Filters survive a reload", func(t *testing.T) {
		ws.shop(t, "cus_7", "customers/create", `{}`)
		do(t, ctx, chromedp.Navigate(ws.UI+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")),
			chromedp.SetValue(chromedp.CSS(`input[name="type"]`), "orders/create"),
			chromedp.Submit(chromedp.CSS(`input[name="type"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
		check := func(when string) {
			t.Helper()
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			if !strings.Contains(loc, "type=orders%2Fcreate") {
				t.Errorf("%s: URL %s, want the filter in it", when, loc)
			}
			rows := text(t, ctx, "#events tbody")
			if !strings.Contains(rows, "ord_1001") || strings.Contains(rows, "cus_7") || strings.Contains(rows, "ord_live") {
				t.Errorf("%s: rows %q, want only orders/create", when, rows)
			}
			if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[name="type"]`))); v != "orders/create" {
				t.Errorf("%s: the type field holds %q", when, v)
			}
		}
		check("after filtering")
		do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
		check("after a reload")
		// A live event the filter drops does not appear.
		ws.shop(t, "cus_8", "customers/create", `{}`)
		live := ws.shop(t, "ord_1002", "orders/create", `{}`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-id="%d"]`, live))))
		if rows := text(t, ctx, "#events tbody"); strings.Contains(rows, "cus_8") {
			t.Errorf("the filtered live list shows cus_8: %q", rows)
		}
	})

	t.Run("Detail", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/events/%d", ws.UI, first)), chromedp.WaitVisible(chromedp.CSS("#body-tree")))
		if h := text(t, ctx, "#headers"); !strings.Contains(h, "X-Shop-Domain") || !strings.Contains(h, "demo.example") {
			t.Errorf("headers show %q, want X-Shop-Domain: demo.example", h)
		}
		tree := text(t, ctx, "#body-tree")
		for _, want := range []string{"total", `"12.50"`, "sku", `"A-1"`} {
			if !strings.Contains(tree, want) {
				t.Errorf("the pretty body lacks %s: %q", want, tree)
			}
		}
		// The received time is the browser's, UTC on hover.
		title := eval[string](t, ctx, `document.querySelector("dl.facts time").title`)
		if !strings.HasSuffix(title, " UTC") {
			t.Errorf("the time's title is %q, want UTC", title)
		}
	})

	t.Run("Conflicts", func(t *testing.T) {
		// The same id again with another body, holding markup: kept as a
		// conflict and diffed against the body kept, as text.
		id := ws.shop(t, "ord_conflict", "orders/create", `{"id":"c","note":"first"}`)
		evil := `<img src=x onerror="window.pwned=1">`
		status, answer := ws.Post("/hooks/shop", map[string]string{"X-Id": "ord_conflict", "X-Type": "orders/create", "Content-Type": "application/json"},
			[]byte(`{"id":"c","note":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"}`))
		if status != http.StatusOK || !strings.Contains(answer, "duplicate") {
			t.Fatalf("second copy: %d %s, want 200 duplicate", status, answer)
		}
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/events/%d", ws.UI, id)), chromedp.WaitVisible(chromedp.CSS("#conflicts")))
		diff := text(t, ctx, "#conflict-0 .conflict-diff")
		if !strings.Contains(diff, `-   "note": "first"`) || !strings.Contains(diff, `+   "note": "`+strings.ReplaceAll(evil, `"`, `\"`)+`"`) {
			t.Errorf("the conflict's diff shows %q, want the note changed, its markup as text", diff)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("#conflicts img").length`); n != 0 || eval[bool](t, ctx, `window.pwned === 1`) {
			t.Errorf("the conflicting body's markup became %d elements or ran", n)
		}
		if h := text(t, ctx, "#conflict-0 h3"); !strings.Contains(h, "Received") || !strings.Contains(h, "bytes, application/json") {
			t.Errorf("the conflict's heading says %q, want its time and size", h)
		}
	})

	t.Run("Copy as curl", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/events/%d", ws.UI, first)), chromedp.WaitVisible(chromedp.CSS("#curl-url")),
			chromedp.SetValue(chromedp.CSS("#curl-url"), ws.URL+"/hooks/shop"),
			chromedp.Click(chromedp.CSS(`#curl-form button`)), chromedp.WaitVisible(chromedp.CSS("#curl-command")))
		cmd := text(t, ctx, "#curl-command")
		if !strings.HasPrefix(cmd, "curl -sS -X POST '"+ws.URL+"/hooks/shop'") || !strings.Contains(cmd, "X-Shop-Domain: demo.example") {
			t.Errorf("Copy as curl shows %q, want a POST of the stored request to the URL given", cmd)
		}
	})

	t.Run("Replay", func(t *testing.T) {
		before := ws.attempts(t, first)
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/events/%d", ws.UI, first)), chromedp.WaitVisible(chromedp.CSS("#replay-event")),
			chromedp.Click(chromedp.CSS("#replay-event")), chromedp.WaitVisible(chromedp.CSS("#confirm-ok")))
		if n := ws.attempts(t, first); n != before {
			t.Fatalf("attempts=%d before the confirmation, want %d: replay must ask first", n, before)
		}
		do(t, ctx, chromedp.Click(chromedp.CSS("#confirm-ok")), chromedp.WaitVisible(chromedp.CSS("#result")))
		if got := text(t, ctx, "#result"); !strings.Contains(got, "1 delivery queued again") {
			t.Errorf("the page says %q, want what the replay did", got)
		}
		waitFor(t, 10*time.Second, "the replayed attempt in the store", func() bool { return ws.attempts(t, first) == before+1 })
	})

	t.Run("Keyboard", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(ws.UI+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")), chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("k"))
		sel := eval[string](t, ctx, `(document.querySelector("#events tr.sel")||{dataset:{}}).dataset.id || ""`)
		top := eval[string](t, ctx, `document.querySelector("#events tbody tr").dataset.id`)
		if sel == "" || sel != top {
			t.Fatalf("after j j k the selected row is %q, want the first, %s", sel, top)
		}
		do(t, ctx, chromedp.KeyEvent("/"))
		if id := eval[string](t, ctx, `document.activeElement.id`); id != "search" {
			t.Errorf("after / the focus is on %q, want the search field", id)
		}
		second := eval[string](t, ctx, `document.querySelectorAll("#events tbody tr")[1].dataset.id`)
		do(t, ctx, chromedp.KeyEvent("\x1b"), chromedp.KeyEvent("j"), chromedp.KeyEvent("\r"))
		var loc string
		waitFor(t, 10*time.Second, "Enter to open the event", func() bool {
			loc, _ = chromedp.Run(ctx, chromedp.Location())
			return strings.Contains(loc, "/events/")
		})
		if !strings.HasSuffix(loc, "/events/"+second) {
			t.Errorf("after Escape, j and Enter the page is %s, want event %s (the second row)", loc, second)
		}
	})

	t.Run("Markup in an event stays text", func(t *testing.T) {
		// Through the live tail (rows the script builds) and the pages.
		do(t, ctx, chromedp.Navigate(ws.UI+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
		const evil = `<img src=x onerror="window.pwned=1">`
		id := ws.shop(t, "evt_"+evil, "type_"+evil, `{"html":"`+strings.ReplaceAll(evil, `"`, `\"`)+`","`+strings.ReplaceAll(evil, `"`, `\"`)+`":1}`, "X-Evil", evil)
		row := fmt.Sprintf(`#events tbody tr[data-id="%d"]`, id)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(row)))
		if got := text(t, ctx, row); !strings.Contains(got, "evt_"+evil) {
			t.Errorf("the live row shows %q, want the id as text", got)
		}
		// The CSP would stop the handler from running; the markup must
		// not even become an element.
		check := func(page string) {
			t.Helper()
			if n := eval[int](t, ctx, `document.querySelectorAll("img").length`); n != 0 {
				t.Errorf("%s holds %d img elements, want none", page, n)
			}
			if eval[bool](t, ctx, `window.pwned === 1`) {
				t.Errorf("%s ran the event's markup", page)
			}
		}
		check("the live list")
		do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(row)))
		check("the list")
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/events/%d", ws.UI, id)), chromedp.WaitVisible(chromedp.CSS("#body-tree")))
		check("the event")
		if tree := text(t, ctx, "#body-tree"); !strings.Contains(tree, evil) {
			t.Errorf("the body shows %q, want the markup as text", tree)
		}
	})

	t.Run("Without JavaScript", func(t *testing.T) {
		noJS := func(off bool) chromedp.Action[chromedp.Void] {
			return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
				_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: off})
				return chromedp.Void{}, err
			}
		}
		do(t, ctx, noJS(true), chromedp.Navigate(ws.UI+"/?type=orders%2Fcreate"), chromedp.WaitVisible(chromedp.CSS("#events")))
		defer do(t, ctx, noJS(false))
		if eval[bool](t, ctx, `document.documentElement.classList.contains("js")`) {
			t.Fatal("the script ran: the page is not the one without JavaScript")
		}
		if rows := text(t, ctx, "#events tbody"); !strings.Contains(rows, "ord_1001") {
			t.Errorf("without JavaScript the list shows %q, want the events", rows)
		}
		do(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.open[href="/events/%d"]`, first))), chromedp.WaitVisible(chromedp.CSS("#body-tree")))
		if tree := text(t, ctx, "#body-tree"); !strings.Contains(tree, `"A-1"`) {
			t.Errorf("without JavaScript the body shows %q", tree)
		}
		if h := text(t, ctx, "#headers"); !strings.Contains(h, "demo.example") {
			t.Errorf("without JavaScript the headers show %q", h)
		}
	})

	t.Run("Replay a selection", func(t *testing.T) {
		before := ws.attempts(t, first)
		do(t, ctx, chromedp.Navigate(ws.UI+"/?type=orders%2Fcreate"), chromedp.WaitVisible(chromedp.CSS("#live.on")),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`input.pick[value="%d"]`, first))),
			chromedp.Click(chromedp.CSS("#replay-selected")), chromedp.WaitVisible(chromedp.CSS("#confirm-ok")),
			chromedp.Click(chromedp.CSS("#confirm-ok")), chromedp.WaitVisible(chromedp.CSS("#result")))
		waitFor(t, 10*time.Second, "the replayed attempt in the store", func() bool { return ws.attempts(t, first) == before+1 })
	})
}

// TestBrowser_Screenshots writes the README's screenshots: the list, an
// event and the dead letters, light and dark, and the list at 360 px. With
// HOOKBOX_UPDATE_SCREENSHOTS=1 they go to docs/, else to the test's
// artifact directory (go test -artifacts keeps them).
func TestBrowser_Screenshots(t *testing.T) {
	ws := startWebWith(t, "\n[health]\ninterval = \"100ms\"\ntarget_failing = 2\n")
	ctx := browser(t, 1280, 800)
	var detail int64
	for i, e := range []struct{ id, typ, body string }{
		{"ord_5501", "orders/create", `{"id":5501,"email":"ana@example.com","total_price":"49.90","currency":"EUR","line_items":[{"sku":"TEE-M","quantity":2,"price":"19.95"},{"sku":"CAP","quantity":1,"price":"10.00"}],"shipping_address":{"city":"Lisbon","country":"PT"}}`},
		{"ord_5501_paid", "orders/paid", `{"id":5501,"financial_status":"paid","total_price":"49.90"}`},
		{"cus_812", "customers/create", `{"id":812,"email":"ana@example.com","accepts_marketing":false}`},
		{"ord_5502", "orders/create", `{"id":5502,"email":"li@example.com","total_price":"18.00","currency":"EUR","line_items":[{"sku":"MUG","quantity":1,"price":"18.00"}],"shipping_address":{"city":"Porto","country":"PT"}}`},
		{"ref_77", "refunds/create", `{"id":77,"order_id":5501,"amount":"10.00"}`},
	} {
		id := ws.shop(t, e.id, e.typ, e.body, "X-Shopify-Shop-Domain", "demo-shop.myshopify.com", "X-Shopify-Hmac-Sha256", "redacted-by-hookbox")
		ws.waitStatus(t, id, queue.Done)
		if i == 3 {
			detail = id
		}
	}
	ws.Fail.Store(true)
	for _, e := range []string{"ord_5503", "ord_5504"} {
		id := ws.shop(t, e, "orders/create", `{"id":"`+e+`"}`)
		ws.waitStatus(t, id, queue.Dead)
	}
	ws.Fail.Store(false)
	// A redelivery, as providers send.
	ws.Post("/hooks/shop", map[string]string{"X-Id": "ord_5502", "X-Type": "orders/create"}, []byte(`{}`))
	// The dead ones fired the failing-target alarm (the health page's).
	waitFor(t, 10*time.Second, "the target_failing alarm", func() bool {
		var a web.HealthAnswer
		ws.getJSON(t, "/api/health", http.StatusOK, &a)
		for _, al := range a.Alarms {
			if al.Alarm == "target_failing" && al.Firing {
				return true
			}
		}
		return false
	})

	dir := t.ArtifactDir()
	if os.Getenv("HOOKBOX_UPDATE_SCREENSHOTS") != "" {
		dir = "docs"
	}
	shot := func(name, path, ready string) {
		t.Helper()
		do(t, ctx, chromedp.Navigate(ws.UI+path), chromedp.WaitVisible(chromedp.CSS(ready)))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, scheme := range []string{"light", "dark"} {
		do(t, ctx, func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return chromedp.Void{}, err
		})
		if got := eval[bool](t, ctx, `matchMedia("(prefers-color-scheme: dark)").matches`); got != (scheme == "dark") {
			t.Fatalf("prefers-color-scheme dark=%v, want %s", got, scheme)
		}
		shot("ui-list-"+scheme+".png", "/", "#live.on")
		shot("ui-event-"+scheme+".png", fmt.Sprintf("/events/%d", detail), "#body-tree")
		shot("ui-dead-"+scheme+".png", "/dead", "#dead")
		shot("ui-health-"+scheme+".png", "/health", "#health-targets")
	}
	do(t, ctx, chromedp.EmulateViewport(360, 740))
	shot("ui-list-360.png", "/", "#live.on")
	// Readable at 360 px: nothing wider than the screen but the tables'
	// own scrolling boxes.
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the list is %d px wide at 360 px", w)
	}
}

// TestBrowser_TailLoad posts 1,000 webhooks a second for
// HOOKBOX_TAIL_LOAD seconds (unset: skipped) to a hookbox whose list is
// open, and logs, each second, the page's rows, its JS heap and how far
// its newest row is behind the store: the live list keeps up and stays
// bounded. BENCHMARKS.md has a run.
func TestBrowser_TailLoad(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("HOOKBOX_TAIL_LOAD"))
	if secs <= 0 {
		t.Skip("set HOOKBOX_TAIL_LOAD=SECONDS to run the live list under 1,000 webhooks a second")
	}
	ws := startWeb(t)
	ctx := browser(t, 1280, 900)
	do(t, ctx, chromedp.Navigate(ws.UI+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	// 64 senders, as a provider's connections: one at a time, each
	// waits for its fsync; together they share commits.
	stop := make(chan struct{})
	tokens := make(chan int, 1000)
	var sent atomic.Int64
	var wg sync.WaitGroup
	go func() {
		defer close(tokens)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for range 10 { // 10 every 10 ms: 1,000 a second
				n++
				select {
				case tokens <- n:
				default: // the senders are behind: not sent
				}
			}
		}
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range tokens {
				req, _ := http.NewRequest(http.MethodPost, ws.URL+"/hooks/shop", strings.NewReader(`{"n":`+strconv.Itoa(n)+`}`))
				req.Header.Set("X-Id", "load_"+strconv.Itoa(n))
				req.Header.Set("X-Type", "load")
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
					sent.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	for s := 1; s <= secs; s++ {
		time.Sleep(time.Until(start.Add(time.Duration(s) * time.Second)))
		rows := eval[int](t, ctx, `document.querySelector("#events tbody").rows.length`)
		heap := eval[float64](t, ctx, `performance.memory ? performance.memory.usedJSHeapSize : 0`)
		shown := eval[string](t, ctx, `(document.querySelector("#events tbody tr") || {dataset: {id: "none"}}).dataset.id`)
		t.Logf("t=%4.1fs rows=%d heap=%.1f MiB newest shown=%s stored=%d", time.Since(start).Seconds(), rows, heap/(1<<20), shown, ws.newest(t))
		if rows > 500 {
			t.Errorf("t=%ds: %d rows, want at most the window of 500", s, rows)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("posted %d webhooks in %d s", sent.Load(), secs)
}
