package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/order"
	"hookbox/sqlite"
)

// The bench writes hookbox's stores itself (a prefill, a backlog) and reads
// their attempt records, through the packages hookbox's servers use: setup
// and timing that must not run inside the server under test.

// attemptSpan reads from the store at path when its first attempt started
// and its last one ended: the drain's own time, without the server's start
// or the polling that noticed the end.
func attemptSpan(ctx context.Context, path string) (first, last time.Time, err error) {
	db, err := sqlite.Open(path, sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		return first, last, err
	}
	defer db.Close()
	first, last, ok, err := db.AttemptSpan(ctx)
	if err != nil {
		return first, last, err
	}
	if !ok || !last.After(first) {
		return first, last, errors.New("read attempt times: no attempts recorded")
	}
	return first, last, nil
}

// fill writes events straight into a new store at path, in large
// transactions with synchronous off (it is setup, not measurement), each
// queued for targets.
func (b *runner) fill(ctx context.Context, path string, events int, targets []string) error {
	db, err := sqlite.Open(path, sqlite.Options{Synchronous: "off", Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	if b.ordered() {
		lanes := map[string]order.Lane{}
		for _, t := range targets {
			lanes[t] = order.Lane{Mode: order.Mode(b.Order)}
		}
		db.SetOrder(lanes)
	}
	prefix := b.runID + "-fill-" + filepath.Base(filepath.Dir(path))
	now := time.Now()
	const batch = 5000
	start := time.Now()
	evs := make([]*dedupe.Event, 0, batch)
	for done := 0; done < events; {
		k := min(batch, events-done)
		evs = evs[:0]
		for i := done; i < done+k; i++ {
			id := prefix + "-" + strconv.Itoa(i)
			headers := b.req.Header.Clone()
			headers.Set(IDHeader, id)
			ev := &dedupe.Event{
				Source: "github", EventID: id, Type: "push", ReceivedAt: now,
				ContentType: "application/json", Headers: headers, Body: b.req.Body,
			}
			if b.ordered() {
				// Round robin over the keys, each key's versions rising.
				ev.OrderKey, ev.OrderVersion = "key-"+strconv.Itoa(i%b.Keys), strconv.Itoa(i)
				ev.OrderRank, _ = order.Rank(ev.OrderVersion)
			}
			evs = append(evs, ev)
		}
		_, err := db.IngestEvents(ctx, evs, targets)
		if err != nil {
			db.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("fill %s with %d events: %w (stores go under $TMPDIR: is that disk full?)", path, events, err)
		}
		done += k
		el := time.Since(start).Seconds()
		b.progress(fmt.Sprintf("prefill %s: %d/%d events  %.0f/s", filepath.Base(filepath.Dir(path)), done, events, float64(done)/el))
	}
	if err := db.Close(); err != nil {
		return err
	}
	// Flush the prefill to disk now, so that the server measured next does
	// not pay for its writeback in its own fsyncs.
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// freshStore is the path of a new store for one run.
func (b *runner) freshStore(round int, name string) string {
	return filepath.Join(b.dir, fmt.Sprintf("r%d-%s", round, name), "hookbox.db")
}

// writeConfig writes a hookbox config with default durability, one GitHub
// source, and the given [[target]] text.
func (b *runner) writeConfig(round int, name, storePath, targets string) (string, error) {
	text := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"

[store]
path = %q

[delivery]
workers = %d

[[source]]
name = "github"
verify = "github"
secret = %q
%s
%s`, storePath, b.Workers, Secret, b.orderKey(), targets)
	path := filepath.Join(b.dir, fmt.Sprintf("r%d-%s.toml", round, name))
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// orderKey is the source's order_key line under an ordered target: each
// request's delivery id, as the load's bodies are all alike.
func (b *runner) orderKey() string {
	if !b.ordered() {
		return ""
	}
	return `order_key = "header:` + IDHeader + `"` + "\n"
}
