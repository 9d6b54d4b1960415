package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/rs/zerolog"
)

// ErrClosed means the store is shutting down and took no new write.
var ErrClosed = errors.New("store is closed")

// CommitError wraps a failure of the shared transaction (begin, savepoint
// bookkeeping or commit): nothing of the batch was written.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "commit: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// Stats counts group commits, for metrics and benchmarks.
type Stats struct {
	Commits      int64 // transactions committed
	Writes       int64 // writes batched into them
	FailedCommit int64 // transactions that failed: none of their writes happened
}

// writer is the store's one write connection and the goroutine that runs
// every write on it, many writes to a transaction (group commit: one fsync
// for all of them).
type writer struct {
	conn     *sql.DB
	log      zerolog.Logger
	maxBatch int

	ops       chan *op
	mu        sync.RWMutex // guards closed against sends on ops
	closed    bool
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	statsMu sync.Mutex
	stats   Stats

	prepared sync.Map // query → *sql.Stmt prepared on conn, nil while preparing
}

type op struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	err  error
	done chan struct{} // closed after the commit, for write
	cb   func(error)   // called after the commit, for writeAsync
}

// startWriter starts the writer goroutine on conn, a pool of one connection.
func startWriter(conn *sql.DB, maxBatch int, log zerolog.Logger) *writer {
	w := &writer{conn: conn, log: log, maxBatch: maxBatch, ops: make(chan *op, 4096), done: make(chan struct{})}
	go w.loop()
	return w
}

// write runs fn inside a transaction shared with other concurrent writes
// (group commit) and returns once that transaction is durably committed.
// fn runs under its own savepoint: if it returns an error, only its changes
// are rolled back and that error is returned. If the commit itself fails,
// every write of the batch gets the commit error and none of them happened.
// fn runs on the writer goroutine: it must not call write. fn may run more
// than once: when another write of its batch fails, the batch is rolled
// back and every other fn runs again under its own savepoint. So fn must
// only change the database and set its results, nothing outside.
//
// ctx decides only whether the write runs: one whose ctx has ended before
// the writer reaches it is skipped and gets ctx's error. fn's statements
// should use a context without cancellation (context.WithoutCancel): a
// statement its context interrupts rolls back the whole transaction, and
// with it the other writes of the batch.
//
// write returns ErrClosed once close has begun.
func (w *writer) write(ctx context.Context, fn func(*sql.Tx) error) error {
	o := &op{ctx: ctx, fn: fn, done: make(chan struct{})}
	if err := w.enqueue(o); err != nil {
		return err
	}
	// The write cannot be abandoned once queued: the caller must learn
	// whether it committed, so wait for the writer rather than ctx.
	<-o.done
	return o.err
}

// writeAsync is write without waiting: fn joins the next group commit and
// done is called with the outcome once it is durable (or failed). done runs
// on the writer goroutine: it must be quick and must not call write. It
// returns ErrClosed, without calling done, once close has begun.
func (w *writer) writeAsync(ctx context.Context, fn func(*sql.Tx) error, done func(error)) error {
	return w.enqueue(&op{ctx: ctx, fn: fn, cb: done})
}

// enqueue hands o to the writer, or returns ErrClosed once close has begun
// (close takes the lock to close the queue).
func (w *writer) enqueue(o *op) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	w.ops <- o
	return nil
}

func (w *writer) loop() {
	defer close(w.done)
	batch := make([]*op, 0, w.maxBatch)
	for {
		o, ok := <-w.ops
		if !ok {
			return
		}
		batch = append(batch[:0], o)
		batch = w.gather(batch)
		w.commit(batch)
		for i := range batch {
			batch[i] = nil
		}
	}
}

// gather adds whatever else is waiting to the batch. With few cores the
// goroutines that are about to submit may not have run yet, so yield once
// before deciding the batch is complete.
func (w *writer) gather(batch []*op) []*op {
	for yielded := false; len(batch) < w.maxBatch; {
		select {
		case o, ok := <-w.ops:
			if !ok {
				return batch
			}
			batch = append(batch, o)
		default:
			if yielded {
				return batch
			}
			yielded = true
			runtime.Gosched()
		}
	}
	return batch
}

func (w *writer) commit(batch []*op) {
	err := w.runBatch(batch)
	w.statsMu.Lock()
	if err != nil {
		w.stats.FailedCommit++
	} else {
		w.stats.Commits++
		w.stats.Writes += int64(len(batch))
	}
	w.statsMu.Unlock()
	if err != nil {
		w.log.Error().Err(err).Int("writes", len(batch)).Msg("commit failed")
	}
	for _, o := range batch {
		if err != nil && o.err == nil {
			o.err = err
		}
		if o.cb != nil {
			o.cb(o.err)
		} else {
			close(o.done)
		}
	}
}

// runBatch commits the batch. Writes rarely fail, so the batch first runs
// without savepoints (two statements fewer per write); if one write fails,
// that transaction is rolled back and the batch runs again with a savepoint
// around each write, so that only the failing one is undone.
func (w *writer) runBatch(batch []*op) error {
	failed, err := w.tryBatch(batch, false)
	if err != nil || !failed || len(batch) == 1 {
		return err
	}
	for _, o := range batch {
		o.err = nil
	}
	_, err = w.tryBatch(batch, true)
	return err
}

// tryBatch runs every write of batch in one transaction and commits it.
// Without isolate, the first failing write stops the batch, nothing is
// committed, and failed is true.
func (w *writer) tryBatch(batch []*op, isolate bool) (failed bool, err error) {
	ctx := context.Background()
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		return false, &CommitError{fmt.Errorf("begin: %w", err)}
	}
	defer tx.Rollback()
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			continue
		}
		if !isolate {
			if err := o.fn(tx); err != nil {
				o.err = err
				return true, nil
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, `SAVEPOINT w`); err != nil {
			return false, &CommitError{fmt.Errorf("savepoint: %w", err)}
		}
		if err := o.fn(tx); err != nil {
			o.err = err
			// SQLite may have rolled back the whole transaction (disk full,
			// I/O error); then the savepoint is gone and so is the batch.
			if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO w`); rerr != nil {
				return false, &CommitError{fmt.Errorf("rollback to savepoint after %v: %w", err, rerr)}
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE w`); err != nil {
			return false, &CommitError{fmt.Errorf("release savepoint: %w", err)}
		}
	}
	if err := tx.Commit(); err != nil {
		return false, &CommitError{err}
	}
	return false, nil
}

// stmt returns query prepared for tx. SQLite parses and plans a statement
// text anew on every plain Exec, a large share of a small write's cost, so
// a query is prepared once on the writer connection and reused by every
// later transaction. The statement is closed with the transaction; callers
// do not close it.
func (w *writer) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if v, loaded := w.prepared.LoadOrStore(query, (*sql.Stmt)(nil)); loaded {
		if st := v.(*sql.Stmt); st != nil {
			return tx.StmtContext(ctx, st), nil
		}
	} else {
		// Prepare it once for the writer connection, from another
		// goroutine: the connection is busy with tx until this batch
		// commits, and the preparation takes it between two batches.
		go func() {
			st, err := w.conn.PrepareContext(context.Background(), query)
			if err != nil {
				w.prepared.Delete(query)
				return
			}
			w.prepared.Store(query, st)
		}()
	}
	// Until then (the first batch or so), prepare it in tx.
	return tx.PrepareContext(ctx, query)
}

// counts returns the commit counters.
func (w *writer) counts() Stats {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return w.stats
}

// close stops taking writes, commits the ones already queued, closes the
// prepared statements, runs before (which closes what else uses the file
// and checkpoints on conn), then closes conn. It returns the first error;
// a second call returns the first one's.
func (w *writer) close(before func() error) error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.ops)
		w.mu.Unlock()
		<-w.done
		w.prepared.Range(func(_, v any) bool {
			if st := v.(*sql.Stmt); st != nil {
				st.Close()
			}
			return true
		})
		w.closeErr = before()
		if err := w.conn.Close(); err != nil && w.closeErr == nil {
			w.closeErr = err
		}
	})
	return w.closeErr
}
