package testenv

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunMarker tags a body so SessionWatch tells which task's body a session
// runs: put RunMarker(key) at the start of the body's batch.
func RunMarker(key string) string { return "/* run " + key + " */ " }

// Span is one session seen running one key's body: its backend pid and the
// first and last times (by the server's clock) it was seen active.
type Span struct {
	PID         int
	First, Last time.Time
}

// SessionWatch samples a PostgreSQL server's active sessions whose query
// starts with a RunMarker (behind the attempt's marker), in its database,
// every few milliseconds, until Stop. It sees what the server runs,
// whichever node sent it: the fault tests read from it whether two copies of
// one task ran at once, and when a copy really stopped.
// Its times are the server's clock (clock_timestamp), the clock leases are
// kept by when the store is the same server.
type SessionWatch struct {
	mu       sync.Mutex
	spans    map[string][]Span // by key, in order of first sighting
	overlaps []string          // one line per sample that saw two sessions run one key
	cancel   context.CancelFunc
	done     chan struct{}
	err      error
}

// WatchSessions starts sampling the server at dsn; it stops when t ends.
func WatchSessions(t testing.TB, dsn string) *SessionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		cancel()
		t.Fatalf("testenv: connecting to watch sessions: %v", err)
	}
	w := &SessionWatch{spans: map[string][]Span{}, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx, conn)
	t.Cleanup(w.Stop)
	return w
}

// sessionsSQL finds the RunMarker at the head of a batch, after the marker of
// the attempt the executor puts first (target/attempt_mark.go).
const sessionsSQL = `SELECT clock_timestamp(), pid, substring(query from '` + runMarkerPattern + `')
	FROM pg_stat_activity
	WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND query ~ '` + runMarkerPattern + `'`

// runMarkerPattern matches a batch that starts with a RunMarker, behind the
// attempt's marker if the executor put one; its group is the key.
const runMarkerPattern = `^(?:/\* readpast task [0-9]+ lease [0-9]+ \*/ )?/\* run ([^ ]+) \*/`

// RunningSQL is a condition on pg_stat_activity that holds for a session whose
// batch starts with RunMarker(key) ($1 is the key), behind the attempt's
// marker if the executor put one.
const RunningSQL = `substring(query from '` + runMarkerPattern + `') = $1`

func (w *SessionWatch) run(ctx context.Context, conn *pgx.Conn) {
	defer close(w.done)
	defer conn.Close(context.Background())
	for ctx.Err() == nil {
		rows, err := conn.Query(ctx, sessionsSQL)
		if err == nil {
			var at time.Time
			var pid int
			var key string
			seen := map[string][]int{}
			_, err = pgx.ForEachRow(rows, []any{&at, &pid, &key}, func() error {
				seen[key] = append(seen[key], pid)
				w.saw(key, pid, at)
				return nil
			})
			for key, pids := range seen {
				if len(pids) > 1 {
					w.mu.Lock()
					w.overlaps = append(w.overlaps, fmt.Sprintf("%s run by sessions %v at once at %s", key, pids, at.Format(time.RFC3339Nano)))
					w.mu.Unlock()
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (w *SessionWatch) saw(key string, pid int, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	spans := w.spans[key]
	for i := range spans {
		if spans[i].PID == pid && at.Sub(spans[i].Last) < time.Second {
			spans[i].Last = at
			return
		}
	}
	w.spans[key] = append(spans, Span{PID: pid, First: at, Last: at})
}

// Stop ends the sampling; calling it twice is harmless.
func (w *SessionWatch) Stop() {
	w.cancel()
	<-w.done
}

// Spans returns the sessions seen running key's body, in order of first
// sighting. A session seen again after a second's pause is a new span.
func (w *SessionWatch) Spans(key string) []Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]Span(nil), w.spans[key]...)
	sort.Slice(out, func(i, j int) bool { return out[i].First.Before(out[j].First) })
	return out
}

// Overlaps lists the samples that saw two sessions run one key at once.
func (w *SessionWatch) Overlaps() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.overlaps...)
}

// Err is the error that stopped the sampling early, if any.
func (w *SessionWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
