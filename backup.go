package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"hookbox/internal/cli"
	"hookbox/sqlite"
)

const backupSummary = "write a consistent copy of the SQLite store to FILE (owner-only), while serve runs or not"

// BackupCommand is `hookbox backup`.
type BackupCommand struct {
	cli.Env
	// Every is how often progress is reported while the copy is written
	// (default 5s); a copy done sooner reports only its end.
	Every time.Duration
}

func (c *BackupCommand) Run(ctx context.Context, args []string) error {
	flags := cli.NewFlagSet(c.Env, "backup", "FILE", backupSummary)
	path := flags.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	flags.Explain(`The copy is taken with SQLite's VACUUM INTO in one read transaction: a
snapshot of every committed event, compacted, in a single file without a WAL,
readable by every hookbox command (point [store] path at it). serve goes on
receiving meanwhile. FILE must not exist: it is written beside itself under a
temporary name and renamed into place once complete, mode 0600.
A PostgreSQL store is backed up with pg_dump.`)
	if err := flags.Parse(args, 1); err != nil {
		return err
	}
	dest := flags.Arg(0)
	cfg, _, err := c.LoadConfig(*path, false)
	if err != nil {
		return err
	}
	if cfg.Store.PostgreSQL() {
		return fmt.Errorf("backup: the store is PostgreSQL (%s): use pg_dump, e.g. pg_dump --format=custom --file=hookbox.dump \"$HOOKBOX_DATABASE_URL\"; hookbox backup copies SQLite stores", cfg.Store.Name())
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("backup: %s already exists: not overwriting it (remove it, or name a new file)", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Stat(cfg.Store.Path); err != nil {
		return fmt.Errorf("backup: no store at %s (pass --config): %w", cfg.Store.Path, err)
	}
	db, err := sqlite.Open(cfg.Store.Path, sqlite.Options{Synchronous: cfg.Store.Synchronous, NoMigrate: true, Logger: zerolog.Nop()})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()

	// Written under a temporary name, created owner-only (VACUUM INTO
	// keeps an empty file's mode), and linked into place once whole: a
	// link never replaces a file that appeared meanwhile, and a copy cut
	// short never takes FILE's name.
	dir := filepath.Dir(dest)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("backup: %w", err)
	}
	tmp.Close()

	start := time.Now()
	stop := c.progress(tmpPath, start)
	err = db.BackupInto(ctx, tmpPath)
	stop()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Link(tmpPath, dest); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("backup: %s appeared while the copy was written: not overwriting it", dest)
		}
		return fmt.Errorf("backup: %w", err)
	}
	if err := syncFile(dir); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	st, err := os.Stat(dest)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(c.Stderr, "backup: wrote %s (%s) from %s in %s\n", dest, size(int(st.Size())), cfg.Store.Path, time.Since(start).Round(time.Millisecond))
	return nil
}

// progress reports the copy's size every c.Every until stop is called.
func (c *BackupCommand) progress(path string, start time.Time) (stop func()) {
	every := c.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			if st, err := os.Stat(path); err == nil {
				fmt.Fprintf(c.Stderr, "backup: %s written after %s\n", size(int(st.Size())), time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// syncFile flushes the file or directory at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
