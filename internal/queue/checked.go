package queue

import (
	"context"
	"time"
)

// Checked returns s behind the checks every dialect shares: each call's
// input is checked, and filled in with its defaults, before s is called, so
// a dialect's store receives values it writes or reads as they are, and a
// new dialect writes SQL, not rules. A refused call gives a
// *ValidationError naming the field and never reaches s. opts.MaxBodyBytes
// is the body limit tasks are checked against. open.Store returns every
// dialect's store this way; checks that depend on one dialect's types (SQL
// Server's date range, its column widths) stay in that dialect.
func Checked(s Store, opts Options) Store {
	return checked{Store: s, maxBody: opts.MaxBodyBytes}
}

// checked is a Store whose inputs are checked before its dialect's store
// sees them. Every method not named here passes through unchanged.
type checked struct {
	Store
	maxBody int
}

// Unwrap returns the dialect's store behind Checked (s itself when it is not
// wrapped): what a caller asks of one dialect only, by an interface the Store
// does not have (SQL Server's count of sessions opened, for /metrics), is
// asked of that store, which the wrapper would hide.
func Unwrap(s Store) Store {
	if c, ok := s.(checked); ok {
		return c.Store
	}
	return s
}

func (c checked) Enqueue(ctx context.Context, tasks []NewTask) ([]Enqueued, error) {
	tasks, err := NormalizeAll(tasks, c.maxBody)
	if err != nil {
		return nil, err
	}
	return c.Store.Enqueue(ctx, tasks)
}

func (c checked) Claim(ctx context.Context, p ClaimParams) ([]*Task, error) {
	if err := CheckClaim(p); err != nil {
		return nil, err
	}
	return c.Store.Claim(ctx, p)
}

func (c checked) Finish(ctx context.Context, attempts []Attempt) ([]FinishResult, error) {
	if err := checkOutcomes(attempts); err != nil {
		return nil, err
	}
	return c.Store.Finish(ctx, attempts)
}

func (c checked) Release(ctx context.Context, attempts []Attempt) ([]FinishResult, error) {
	if err := checkOutcomes(attempts); err != nil {
		return nil, err
	}
	return c.Store.Release(ctx, attempts)
}

// checkOutcomes refuses a batch of attempts if any has an outcome a caller
// may not record (lost is the reclaimer's).
func checkOutcomes(attempts []Attempt) error {
	for _, a := range attempts {
		if err := CheckFinishOutcome(a.Outcome); err != nil {
			return err
		}
	}
	return nil
}

func (c checked) List(ctx context.Context, p ListParams) ([]*Task, error) {
	if p.Text != "" {
		return nil, &ValidationError{Field: "text", Reason: "is a search: Search reads it, within a window"}
	}
	limit, err := CheckList(p)
	if err != nil {
		return nil, err
	}
	p.Limit = limit
	return c.Store.List(ctx, p)
}

func (c checked) UpdateQueue(ctx context.Context, name string, u QueueUpdate) (*Queue, error) {
	if err := CheckQueueUpdate(name, u); err != nil {
		return nil, err
	}
	return c.Store.UpdateQueue(ctx, name, u)
}

func (c checked) SetGroupLimit(ctx context.Context, name string, maxRunning int, actor string) error {
	if err := CheckGroupLimit(name, maxRunning); err != nil {
		return err
	}
	return c.Store.SetGroupLimit(ctx, name, maxRunning, actor)
}

func (c checked) Attempts(ctx context.Context, q LogQuery) ([]AttemptRecord, error) {
	limit, err := CheckLogQuery(q)
	if err != nil {
		return nil, err
	}
	q.Limit = limit
	return c.Store.Attempts(ctx, q)
}

func (c checked) PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	if err := CheckPurge(batch); err != nil {
		return 0, err
	}
	return c.Store.PurgeAttempts(ctx, cutoff, batch)
}

func (c checked) PurgeTasks(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	if err := CheckPurge(batch); err != nil {
		return 0, err
	}
	return c.Store.PurgeTasks(ctx, cutoff, batch)
}

func (c checked) Throughput(ctx context.Context, q ThroughputQuery) ([]ThroughputPoint, error) {
	if err := CheckThroughput(q); err != nil {
		return nil, err
	}
	return c.Store.Throughput(ctx, q)
}

func (c checked) DueSchedules(ctx context.Context, at time.Time, limit int) (DueSchedules, error) {
	if err := CheckDueLimit(limit); err != nil {
		return DueSchedules{}, err
	}
	return c.Store.DueSchedules(ctx, at, limit)
}

func (c checked) Hold(ctx context.Context, op HoldOp) (Held, error) {
	if err := CheckHold(op); err != nil {
		return nil, err
	}
	if op.Kind == HoldEnqueue {
		tasks, err := NormalizeAll(op.Tasks, c.maxBody)
		if err != nil {
			return nil, err
		}
		op.Tasks = tasks
	}
	return c.Store.Hold(ctx, op)
}

func (c checked) CreateBulk(ctx context.Context, b NewBulk) (int64, error) {
	if err := CheckNewBulk(b); err != nil {
		return 0, err
	}
	return c.Store.CreateBulk(ctx, b)
}

func (c checked) ClaimBulk(ctx context.Context, owner string, lease time.Duration) (*BulkOp, error) {
	if err := CheckBulkClaim(owner, lease); err != nil {
		return nil, err
	}
	return c.Store.ClaimBulk(ctx, owner, lease)
}

func (c checked) AdvanceBulk(ctx context.Context, a BulkAdvance) error {
	if err := CheckBulkAdvance(a); err != nil {
		return err
	}
	return c.Store.AdvanceBulk(ctx, a)
}

func (c checked) Bulks(ctx context.Context, before int64, limit int) ([]BulkOp, error) {
	limit, err := CheckBulkPage(before, limit)
	if err != nil {
		return nil, err
	}
	return c.Store.Bulks(ctx, before, limit)
}

func (c checked) DeleteTask(ctx context.Context, id int64, actor string) error {
	if err := CheckTaskAction(id, actor); err != nil {
		return err
	}
	return c.Store.DeleteTask(ctx, id, actor)
}

func (c checked) CountTasks(ctx context.Context, p ListParams, max int) (int64, error) {
	if err := CheckCount(p, max); err != nil {
		return 0, err
	}
	return c.Store.CountTasks(ctx, p, max)
}

func (c checked) Search(ctx context.Context, p ListParams, window int) ([]*Task, int64, error) {
	limit, err := CheckSearch(p, window)
	if err != nil {
		return nil, 0, err
	}
	p.Limit = limit
	return c.Store.Search(ctx, p, window)
}
