package sqlrun

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// SQLite has no way to make a statement take time (no WAITFOR, no pg_sleep),
// so a DBA trying ReadPast on the embedded default could not make a task run
// for a while. Every SQLite connection of the process gets sleep(seconds): it
// waits that long, up to a day, and returns the seconds it slept.
//
// A task's timeout or cancel must stop it like any statement. modernc.org/sqlite
// stops a running statement with sqlite3_interrupt, which the virtual machine
// notices between its steps, not while a function it called is waiting. So
// sleep waits on the context of the body it runs in: a body runs its batches
// through WithSQLiteContext, which files the context under the goroutine that
// runs them, and modernc calls a function on the goroutine that runs the
// statement. A sleep outside such a body (a DBA's own connection) just sleeps.

// maxSleep bounds one sleep() call, like WAITFOR DELAY's 24 hours.
const maxSleep = 24 * time.Hour

// contexts holds the context of each goroutine running a body.
var contexts sync.Map // goroutine id → context.Context

func init() {
	sqlite.MustRegisterScalarFunction("sleep", 1, sleep)
}

// WithSQLiteContext runs fn, a body's statements on a SQLite connection, so
// that sleep() in them ends when ctx does.
func WithSQLiteContext(ctx context.Context, fn func() error) error {
	id := goroutineID()
	contexts.Store(id, ctx)
	defer contexts.Delete(id)
	return fn()
}

// errSleepArg refuses what sleep cannot wait for.
var errSleepArg = errors.New("sleep(seconds) takes a number of seconds from 0 to 86400")

func sleep(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	var secs float64
	switch v := args[0].(type) {
	case int64:
		secs = float64(v)
	case float64:
		secs = v
	default:
		return nil, errSleepArg
	}
	d := time.Duration(secs * float64(time.Second))
	if secs < 0 || d > maxSleep {
		return nil, errSleepArg
	}
	done := context.Background().Done()
	if c, ok := contexts.Load(goroutineID()); ok {
		done = c.(context.Context).Done()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return secs, nil
	case <-done:
		return nil, fmt.Errorf("sleep interrupted: %w", context.Canceled)
	}
}

// goroutineID is the id of the calling goroutine, from the first line of its
// stack ("goroutine 123 [running]:"). Go offers no other way, on purpose; here
// it only ties a sleep to the body it runs in.
func goroutineID() uint64 {
	var buf [40]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = len("goroutine ")
	end := prefix
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	id, _ := strconv.ParseUint(string(b[prefix:end]), 10, 64)
	return id
}
