package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SyncFloor writes a 4 KiB page and fsyncs it, rate times a second for d
// (by the clock: a disk slower than rate ends it on time with fewer syncs),
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
	start := time.Now()
	i := 0
	err = pace(ctx, start, start.Add(d), rate, func(time.Time) error {
		t := time.Now()
		// Pages appended, then written over from the start once the file
		// holds 4 MiB: as SQLite reuses its WAL after a checkpoint.
		if _, err := f.WriteAt(page, int64(i%1024)*int64(len(page))); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Base(f.Name()), err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", filepath.Base(f.Name()), err)
		}
		h.Record(time.Since(t))
		i++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sync floor: %w", err)
	}
	return h, nil
}
