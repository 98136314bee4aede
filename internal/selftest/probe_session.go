package selftest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

// probeSessions proves that a transactional body, succeeded or failed, hands
// the store's pool a clean session (SQL Server: sp_reset_connection does not
// reset the isolation level, and the store restores the rest itself). It runs
// on a store of its own, used one call at a time, so its pool holds one
// session: the one each body ran on is the one the next call gets (checked by
// the session id each body reports).
func probeSessions(ctx context.Context, e *env) []Check {
	leak := Check{Name: "isolation after a failed body", Guarantee: "a body that sets SERIALIZABLE and fails leaves no isolation level to the store's next claim (error 650)"}
	clean := Check{Name: "session after any body", Guarantee: "the session after any body is as before it: isolation, ROWCOUNT, XACT_ABORT, temp tables, applocks, context info, login"}
	if e.dialect != dialect.SQLServer {
		leak.Status, leak.Evidence = Skip, "SQL Server's pooled sessions only"
		clean.Status, clean.Evidence = Skip, "SQL Server's pooled sessions only"
		return []Check{leak, clean}
	}
	s, err := open.Store(ctx, e.sc.dsn, queue.Options{})
	if err != nil {
		leak.failed("opening a store of one session", err)
		clean.failed("opening a store of one session", err)
		return []Check{leak, clean}
	}
	defer s.Close()
	p := &sessionProbe{s: s}
	return []Check{
		timed(leak, func(c *Check) { p.isolationLeak(ctx, c) }),
		timed(clean, func(c *Check) { p.cleanAfterBodies(ctx, c) }),
	}
}

// sessionProbe runs transactional bodies on one store, one at a time.
type sessionProbe struct {
	s       queue.Store
	session string // the session every body must have run on
	n       int
}

// run enqueues body as a transactional task, claims it, runs it and records
// its end; it returns what the body printed and its rows.
func (p *sessionProbe) run(ctx context.Context, body string) (queue.TxResult, error) {
	p.n++
	q := fmt.Sprintf("st-session-%d", p.n)
	if _, err := p.s.Enqueue(ctx, []queue.NewTask{{Queue: q, Body: body, Transactional: true, MaxAttempts: 1, CreatedBy: "selftest"}}); err != nil {
		return queue.TxResult{}, fmt.Errorf("enqueueing: %w", err)
	}
	got, err := p.s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "selftest/w1", Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(got) != 1 {
		return queue.TxResult{}, fmt.Errorf("claiming after body %d: %d tasks (%v)", p.n-1, len(got), err)
	}
	a := queue.Attempt{Lease: got[0].Lease(), Outcome: queue.OutcomeSucceeded, Node: "selftest", Worker: "w1", StartedAt: time.Now()}
	res, err := p.s.RunTransactional(ctx, a, body)
	if err != nil {
		return res, fmt.Errorf("running body %d: %w", p.n, err)
	}
	if p.session == "" {
		p.session = res.SessionID
	} else if res.SessionID != p.session {
		return res, errSessionChanged
	}
	if res.BodyErr != nil {
		a.Outcome, a.Error = queue.OutcomeFailed, res.BodyErr.Error()
	}
	a.FinishedAt = time.Now()
	if fin, err := p.s.Finish(ctx, []queue.Attempt{a}); err != nil || fin[0].Err != nil {
		return res, fmt.Errorf("finishing body %d: %v", p.n, errors.Join(err, fin[0].Err))
	}
	return res, nil
}

// errSessionChanged: the pool opened a second session, so the probe cannot
// tell what the first handed on.
var errSessionChanged = errors.New("the store's pool changed sessions between two bodies")

// isolationLeak runs a body that sets SERIALIZABLE and fails, then claims.
func (p *sessionProbe) isolationLeak(ctx context.Context, c *Check) {
	res, err := p.run(ctx, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;\nSELECT 1/0;")
	if err == nil && res.BodyErr == nil {
		err = errors.New("the body that divides by zero succeeded")
	}
	if err == nil {
		_, err = p.run(ctx, "SELECT 1;") // its claim runs on the failed body's session
	}
	switch {
	case errors.Is(err, errSessionChanged):
		c.Status, c.Evidence = Skip, err.Error()
	case err != nil:
		c.failed("after a failed SERIALIZABLE body", err)
	default:
		c.passed("session %s: a claim after a failed SERIALIZABLE body succeeded", p.session)
	}
}

// stateBody prints what a body sees of its session; its SELECT of two rows
// counts 1 under a ROWCOUNT 1 left behind.
const stateBody = `SELECT 1 UNION ALL SELECT 2;
PRINT CONCAT(N'isolation=', (SELECT transaction_isolation_level FROM sys.dm_exec_sessions WHERE session_id = @@SPID),
    N' xact_abort=', CASE WHEN @@OPTIONS & 16384 = 0 THEN N'OFF' ELSE N'ON' END,
    N' temp=', CASE WHEN OBJECT_ID(N'tempdb..#readpast_probe') IS NULL THEN N'none' ELSE N'left' END,
    N' applock=', APPLOCK_MODE(N'public', N'readpast/probe', N'Session'),
    N' context_info=', CASE WHEN CONTEXT_INFO() IS NULL OR REPLACE(CONVERT(varchar(300), CONTEXT_INFO(), 2), '0', '') = '' THEN N'clear' ELSE N'set' END,
    N' login=', CASE WHEN ORIGINAL_LOGIN() = SUSER_SNAME() THEN N'own' ELSE N'other' END);`

// dirtyBody changes every part of the session stateBody reads.
const dirtyBody = `SET ROWCOUNT 1;
SET XACT_ABORT OFF;
SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;
CREATE TABLE #readpast_probe (id int);
SET CONTEXT_INFO 0x0102;
DECLARE @r int;
EXEC @r = sp_getapplock @Resource = N'readpast/probe', @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0;
`

// cleanAfterBodies reads the session after a clean body, then after a body
// that dirties it and succeeds and one that dirties it and fails.
func (p *sessionProbe) cleanAfterBodies(ctx context.Context, c *Check) {
	state := func() (string, error) {
		res, err := p.run(ctx, stateBody)
		if err == nil && res.BodyErr != nil {
			err = res.BodyErr
		}
		return fmt.Sprintf("%s rows=%d", strings.TrimSpace(res.Messages), res.RowsAffected), err
	}
	before, err := state()
	var dirty []string
	for _, body := range []string{dirtyBody, dirtyBody + "SELECT 1/0;"} {
		if err != nil {
			break
		}
		if _, err = p.run(ctx, body); err != nil {
			break
		}
		var after string
		if after, err = state(); err == nil && after != before {
			dirty = append(dirty, after)
		}
	}
	switch {
	case errors.Is(err, errSessionChanged):
		c.Status, c.Evidence = Skip, err.Error()
	case err != nil:
		c.failed("running the bodies", err)
	case len(dirty) > 0:
		c.Status, c.Evidence = Fail, fmt.Sprintf("before: %s; after a body that changed them: %s", before, strings.Join(dirty, "; "))
	default:
		c.passed("session %s after a succeeded and a failed body: %s, as before", p.session, before)
	}
}
