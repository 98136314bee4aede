package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"readpast/internal/queue"
)

// Bulk operations (docs/QUEUE.md, "Bulk operations"): cancel, retry or
// delete every task of a selection. StartBulk stores the request; a node's
// RunBulks claims it and changes its tasks in batches, each task by its own
// one-task operation in a short transaction of its own, and records after
// each batch how far it got (a keyset cursor), so another node goes on from
// there when this one stops.
const (
	// BulkBatch is how many tasks one batch reads and changes.
	BulkBatch = 100
	// BulkLease is how long a node holds a bulk operation without a batch
	// done; another node takes it over after that.
	BulkLease = 30 * time.Second
	// BulkPoll is how often RunBulks looks for work it was not woken for
	// (another node's request, one left by a stopped node).
	BulkPoll = 2 * time.Second
	// BulkCountMax bounds the count of a filter's matching tasks: the tasks
	// page and the request say "more than" above it.
	BulkCountMax = 100_000
)

// CountMatching counts the tasks of a filter, up to BulkCountMax; more
// reports that there are more.
func (o *Ops) CountMatching(ctx context.Context, f queue.TaskFilter) (n int64, more bool, err error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	n, err = o.store.CountTasks(ctx, f.Params(0, 0), BulkCountMax+1)
	if err != nil {
		return 0, false, err
	}
	return min(n, BulkCountMax), n > BulkCountMax, nil
}

// StartBulk checks and stores a bulk operation as actor's, with the count of
// its tasks (a filter's, bounded; the number of ids given), and wakes this
// node's runner. The operation runs in the background; GetBulk follows it.
func (o *Ops) StartBulk(ctx context.Context, actor string, action queue.BulkAction, sel queue.BulkSelection) (*queue.BulkOp, error) {
	if len(sel.IDs) > 0 { // each task once, as it is done once
		sel.IDs = slices.Compact(slices.Sorted(slices.Values(sel.IDs)))
	}
	nb := queue.NewBulk{Action: action, Selection: sel, Actor: actor, Matched: int64(len(sel.IDs))}
	if err := queue.CheckNewBulk(nb); err != nil {
		return nil, err
	}
	if sel.Filter != nil {
		n, _, err := o.CountMatching(ctx, *sel.Filter)
		if err != nil {
			return nil, err
		}
		nb.Matched = n
	}
	ctx, cancel := Bound(ctx)
	defer cancel()
	id, err := o.store.CreateBulk(ctx, nb)
	if err != nil {
		return nil, err
	}
	select {
	case o.bulkWake <- struct{}{}:
	default:
	}
	return o.store.GetBulk(ctx, id)
}

// RunBulks runs bulk operations until ctx ends: it claims one as owner (this
// node), runs it to its end or until it loses the lease, and looks for the
// next when woken by StartBulk or every BulkPoll.
func (o *Ops) RunBulks(ctx context.Context, owner string, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(BulkPoll)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			cctx, cancel := Bound(ctx)
			op, err := o.store.ClaimBulk(cctx, owner, BulkLease)
			cancel()
			if err != nil {
				log.Warn("claiming a bulk operation failed; trying again", "err", err)
				break
			}
			if op == nil {
				break
			}
			if err := o.runBulk(ctx, op); err != nil && ctx.Err() == nil {
				log.Warn("a bulk operation stopped; another pass goes on from its last batch", "bulk", op.ID, "err", err)
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-o.bulkWake:
		case <-t.C:
		}
	}
}

// runBulk runs op's batches under its lease until its end.
func (o *Ops) runBulk(ctx context.Context, op *queue.BulkOp) error {
	sel, err := queue.ParseBulkSelection(op.Selection)
	if err != nil {
		return o.advance(ctx, queue.BulkAdvance{ID: op.ID, Token: op.LeaseToken, Cursor: op.Cursor, Finished: true,
			Error: "its selection could not be read: " + err.Error()})
	}
	cursor := op.Cursor
	for {
		ids, next, last, err := o.bulkBatch(ctx, sel, cursor)
		if err != nil {
			return err
		}
		var done, skipped int64
		for _, id := range ids {
			changed, err := o.bulkOne(ctx, op.Action, id, op.CreatedBy)
			if err != nil {
				return fmt.Errorf("bulk %s of task %d: %w", op.Action, id, err)
			}
			if changed {
				done++
			} else {
				skipped++
			}
		}
		cursor = next
		a := queue.BulkAdvance{ID: op.ID, Token: op.LeaseToken, Cursor: cursor, Done: done, Skipped: skipped,
			Lease: BulkLease, Finished: last}
		if err := o.advance(ctx, a); err != nil || last {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (o *Ops) advance(ctx context.Context, a queue.BulkAdvance) error {
	ctx, cancel := Bound(ctx)
	defer cancel()
	return o.store.AdvanceBulk(ctx, a)
}

// bulkBatch returns the next batch of the selection below cursor, newest
// first, the cursor after it, and whether it is the last: a keyset page of
// the tasks list for a filter (a window of a text search for a filter with
// a text), the next ids given for ids.
func (o *Ops) bulkBatch(ctx context.Context, sel queue.BulkSelection, cursor int64) (ids []int64, next int64, last bool, err error) {
	if sel.Filter == nil {
		var below []int64
		for _, id := range sel.IDs {
			if id < cursor {
				below = append(below, id)
			}
		}
		slices.Sort(below)
		below = slices.Compact(below)
		slices.Reverse(below)
		ids = below[:min(len(below), BulkBatch)]
		if len(ids) > 0 {
			next = ids[len(ids)-1]
		}
		return ids, next, len(below) <= BulkBatch, nil
	}
	lctx, cancel := Bound(ctx)
	defer cancel()
	p := sel.Filter.Params(cursor, BulkBatch)
	var (
		tasks     []*queue.Task
		scannedTo int64
	)
	if p.Text != "" {
		tasks, scannedTo, err = o.store.Search(lctx, p, queue.SearchWindow)
	} else {
		tasks, err = o.store.List(lctx, p)
	}
	if err != nil {
		return nil, 0, false, err
	}
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	switch {
	case len(tasks) == BulkBatch:
		return ids, ids[len(ids)-1], false, nil
	case p.Text != "" && scannedTo > 0: // the window ended before the batch filled
		return ids, scannedTo, false, nil
	}
	return ids, 0, true, nil
}

// bulkOne applies action to one task as actor's, and reports whether it
// changed it: a task the action does not apply to now (already finished,
// still running for a delete, gone) is skipped.
func (o *Ops) bulkOne(ctx context.Context, action queue.BulkAction, id int64, actor string) (bool, error) {
	var err error
	switch action {
	case queue.BulkCancel:
		_, err = o.Cancel(ctx, actor, id)
	case queue.BulkRetry:
		_, err = o.Retry(ctx, actor, id) // wakes this node's workers of the task's queue
	case queue.BulkDelete:
		ctx, cancel := Bound(ctx)
		err = o.store.DeleteTask(ctx, id, actor)
		cancel()
	}
	if errors.Is(err, queue.ErrInvalidState) || errors.Is(err, queue.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
