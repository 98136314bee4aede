package target

// Offline tests of the executor's own logic (the message reader, the error
// chosen, the connection handed back or discarded) on a fake database/sql
// driver that imitates go-mssqldb's message-queue mode as read in its source:
// a reader goroutine queues each message on the *sqlexp.ReturnMessage before
// it passes on the token that follows it, a stream error goes to the token
// stream only, with no message (processSingleResponse's BeginRead failure),
// and NextResultSet walks the tokens. It checks this package against that
// model, not the model against go-mssqldb: the server tests do that.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-sql/sqlexp"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"
)

// Script steps besides sqlexp messages, which the fake queues as they are.
type (
	fakeDone struct{} // a DONE token: the end of a statement
	fakeHang struct{} // the server works until the query's context ends
)

// fakeServer answers the executor's own queries and plays a script for every
// other batch, keyed by its trimmed text.
type fakeServer struct {
	mu        sync.Mutex
	scripts   map[string][]any
	trancount int64 // what SELECT @@TRANCOUNT answers
	broken    bool  // SELECT @@TRANCOUNT fails
	opened    int
	closed    int
	rollbacks int
}

func (s *fakeServer) counts() (opened, closed, rollbacks int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened, s.closed, s.rollbacks
}

var (
	fakeServersMu sync.Mutex
	fakeServers   = map[string]*fakeServer{}
)

func init() { sql.Register("readpast-fake-mssql", fakeDriver{}) }

// newFakeTarget returns a target on a fresh fake server running scripts.
func newFakeTarget(t *testing.T, scripts map[string][]any) (*sqlServerTarget, *fakeServer) {
	srv := &fakeServer{scripts: scripts}
	fakeServersMu.Lock()
	fakeServers[t.Name()] = srv
	fakeServersMu.Unlock()
	db, err := sql.Open("readpast-fake-mssql", t.Name())
	require.NoError(t, err)
	db.SetMaxIdleConns(sqlServerMaxIdle)
	t.Cleanup(func() { _ = db.Close() })
	return &sqlServerTarget{db: db}, srv
}

type fakeDriver struct{}

func (fakeDriver) Open(name string) (driver.Conn, error) {
	fakeServersMu.Lock()
	srv := fakeServers[name]
	fakeServersMu.Unlock()
	srv.mu.Lock()
	srv.opened++
	srv.mu.Unlock()
	return &fakeConn{srv: srv}, nil
}

type fakeConn struct {
	srv  *fakeServer
	msgq *sqlexp.ReturnMessage
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("fake: no Prepare") }
func (c *fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("fake: no Begin") }
func (c *fakeConn) Close() error {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	c.srv.closed++
	return nil
}

// CheckNamedValue takes the message queue out of the arguments, as
// go-mssqldb's does.
func (c *fakeConn) CheckNamedValue(nv *driver.NamedValue) error {
	if m, ok := nv.Value.(*sqlexp.ReturnMessage); ok {
		sqlexp.ReturnMessageInit(m)
		c.msgq = m
		return driver.ErrRemoveArgument
	}
	return nil
}

func (c *fakeConn) ExecContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	if strings.Contains(query, "ROLLBACK") {
		c.srv.mu.Lock()
		c.srv.rollbacks++
		c.srv.trancount = 0
		c.srv.mu.Unlock()
	}
	return driver.RowsAffected(0), nil
}

func (c *fakeConn) QueryContext(ctx context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	msgq := c.msgq
	c.msgq = nil
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	switch strings.TrimSpace(query) {
	case "SELECT CAST(@@SPID AS int);":
		return &valueRows{v: 51}, nil
	case "SELECT @@TRANCOUNT;":
		if c.srv.broken {
			return nil, errors.New("read tcp: connection reset by peer")
		}
		return &valueRows{v: c.srv.trancount}, nil
	}
	script, ok := c.srv.scripts[strings.TrimSpace(query)]
	if !ok || msgq == nil {
		return nil, fmt.Errorf("fake: no script for %q (or no message queue)", query)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &scriptRows{ctx: ctx, cancel: cancel, tokens: make(chan any, 5)}
	go r.play(script, msgq)
	return r, nil
}

// valueRows is one row of one bigint.
type valueRows struct {
	v    int64
	done bool
}

func (r *valueRows) Columns() []string { return []string{"v"} }
func (r *valueRows) Close() error      { return nil }
func (r *valueRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	dest[0], r.done = r.v, true
	return nil
}

// scriptRows plays a script the way go-mssqldb's reader does.
type scriptRows struct {
	ctx    context.Context
	cancel context.CancelFunc
	tokens chan any // fakeDone or error
}

func (r *scriptRows) play(script []any, msgq *sqlexp.ReturnMessage) {
	defer close(r.tokens)
	for _, step := range script {
		switch s := step.(type) {
		case fakeHang:
			<-r.ctx.Done()
			return
		case fakeDone, error:
			select {
			case r.tokens <- s:
			case <-r.ctx.Done():
				return
			}
			if _, isErr := s.(error); isErr {
				return // the error goes to the token stream only
			}
		default:
			_ = sqlexp.ReturnMessageEnqueue(r.ctx, msgq, s)
		}
	}
}

func (r *scriptRows) Columns() []string         { return nil }
func (r *scriptRows) Next([]driver.Value) error { return io.EOF }
func (r *scriptRows) HasNextResultSet() bool    { return true }
func (r *scriptRows) Close() error              { r.cancel(); return nil }

// NextResultSet moves to the next DONE token, as go-mssqldb's Rowsq does.
func (r *scriptRows) NextResultSet() error {
	select {
	case tok, ok := <-r.tokens:
		if !ok {
			return io.EOF
		}
		if err, isErr := tok.(error); isErr {
			return err
		}
		return nil
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}

func notice(text string) sqlexp.MsgNotice {
	return sqlexp.MsgNotice{Message: mssql.Error{Message: text}}
}

// withinSeconds fails the test if fn has not returned after a few seconds.
func withinSeconds(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still running after 5 s")
	}
}

func TestFakeRunCollectsMessagesCountsAndTheFirstError(t *testing.T) {
	raised := mssql.Error{Number: 50000, Class: 16, State: 1, LineNo: 2, Message: "boom"}
	tgt, srv := newFakeTarget(t, map[string][]any{
		"one": {notice("a"), sqlexp.MsgRowsAffected{Count: 2}, sqlexp.MsgNextResultSet{}, fakeDone{},
			notice("b"), sqlexp.MsgNextResultSet{}, fakeDone{}, sqlexp.MsgNextResultSet{}},
		"two": {sqlexp.MsgError{Error: raised}, notice("after"), sqlexp.MsgRowsAffected{Count: 1},
			sqlexp.MsgError{Error: mssql.Error{Number: 50000, Class: 16, State: 1, LineNo: 3, Message: "second"}},
			sqlexp.MsgNextResultSet{}, fakeDone{}},
		"three": {notice("never"), fakeDone{}},
	})
	var session string
	var res Result
	var err error
	withinSeconds(t, func() {
		res, err = tgt.Run(context.Background(), "one\nGO\ntwo\nGO\nthree", func(id string) { session = id })
	})
	require.EqualError(t, err, "batch 2 of 3: Msg 50000, Level 16, State 1, Line 2: boom")
	require.Equal(t, "51", session)
	require.Equal(t, "51", res.SessionID)
	require.EqualValues(t, 3, res.RowsAffected)
	require.Equal(t, "a\nb\nMsg 50000, Level 16, State 1, Line 2: boom\nafter\nMsg 50000, Level 16, State 1, Line 3: second\n", res.Messages)
	opened, closed, _ := srv.counts()
	require.Equal(t, 1, opened)
	require.Equal(t, 0, closed, "a failed body on a clean connection hands it back")
}

func TestFakeRunReadsMoreMessagesThanTheQueueHolds(t *testing.T) {
	var script []any
	var want strings.Builder
	for i := range 200 {
		script = append(script, notice(fmt.Sprint(i)), sqlexp.MsgNextResultSet{}, fakeDone{})
		fmt.Fprintf(&want, "%d\n", i)
	}
	tgt, _ := newFakeTarget(t, map[string][]any{"loud": script})
	var res Result
	var err error
	withinSeconds(t, func() { res, err = tgt.Run(context.Background(), "loud", nil) })
	require.NoError(t, err)
	require.Equal(t, want.String(), res.Messages)
}

// A stream that breaks queues no message: the run must end on the token
// stream's error, not wait on the message queue for a context that never ends.
func TestFakeBrokenStreamEndsTheRunWithoutAContextDeadline(t *testing.T) {
	tgt, srv := newFakeTarget(t, map[string][]any{
		"wait": {notice("before"), errors.New("read tcp: connection reset by peer")},
	})
	srv.broken = true // and the connection no longer answers
	var res Result
	var err error
	withinSeconds(t, func() { res, err = tgt.Run(context.Background(), "wait", nil) })
	require.EqualError(t, err, "read tcp: connection reset by peer")
	require.Equal(t, "before\n", res.Messages)
	_, closed, _ := srv.counts()
	require.Equal(t, 1, closed, "a broken connection is discarded")
}

func TestFakeCancelledRunIsDiscarded(t *testing.T) {
	tgt, srv := newFakeTarget(t, map[string][]any{"slow": {notice("started"), fakeHang{}}})
	cause := errors.New("task timed out")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 100*time.Millisecond, cause)
	defer cancel()
	var err error
	withinSeconds(t, func() { _, err = tgt.Run(ctx, "slow", nil) })
	require.ErrorIs(t, err, cause)
	_, closed, _ := srv.counts()
	require.Equal(t, 1, closed, "a cancelled run's connection is never handed back")
}

func TestFakeOpenTransactionIsRolledBackAndDiscarded(t *testing.T) {
	tgt, srv := newFakeTarget(t, map[string][]any{"ok": {fakeDone{}}})
	srv.trancount = 1
	_, err := tgt.Run(context.Background(), "ok", nil)
	require.ErrorContains(t, err, "left a transaction open (@@TRANCOUNT 1) and it was rolled back")
	opened, closed, rollbacks := srv.counts()
	require.Equal(t, []int{1, 1, 1}, []int{opened, closed, rollbacks})

	_, err = tgt.Run(context.Background(), "ok", nil)
	require.NoError(t, err)
	opened, closed, _ = srv.counts()
	require.Equal(t, []int{2, 1}, []int{opened, closed}, "the next run gets a new connection and hands it back")

	_, err = tgt.Run(context.Background(), "ok", nil)
	require.NoError(t, err)
	opened, _, _ = srv.counts()
	require.Equal(t, 2, opened, "a clean connection is reused")
}

func TestFakeConnectionLostAfterASuccessfulBodyIsAnError(t *testing.T) {
	tgt, srv := newFakeTarget(t, map[string][]any{"ok": {fakeDone{}}})
	srv.broken = true
	_, err := tgt.Run(context.Background(), "ok", nil)
	require.ErrorContains(t, err, "the connection failed after the body, so its outcome is unknown")
}
