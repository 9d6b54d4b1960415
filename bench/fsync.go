package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SyncFloor writes a 4 KiB page and fsyncs it, rate times a second for d,
// in a scratch file in dir, and returns how long each write+fsync took: the
// disk's own share of a durable ack at that rate. Each is timed alone, not
// from its intended time: a slow one would otherwise make the next ones
// queue one by one, which a group commit does not.
func SyncFloor(ctx context.Context, dir string, rate float64, d time.Duration) (*Histogram, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("sync floor: rate %v, want > 0", rate)
	}
	f, err := os.CreateTemp(dir, "syncfloor-*")
	if err != nil {
		return nil, fmt.Errorf("sync floor: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	h := &Histogram{}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d {
			return h, nil
		}
		if err := sleepUntil(ctx, at); err != nil {
			return nil, err
		}
		t := time.Now()
		// A WAL grows: append, wrapping at 4 MiB so the file stays small.
		if _, err := f.WriteAt(page, int64(i%1024)*int64(len(page))); err != nil {
			return nil, fmt.Errorf("sync floor: write %s: %w", filepath.Base(f.Name()), err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("sync floor: fsync %s: %w", filepath.Base(f.Name()), err)
		}
		h.Record(time.Since(t))
	}
}

func sleepUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
