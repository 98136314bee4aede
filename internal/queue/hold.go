package queue

import (
	"context"
	"fmt"
)

// HoldKind names the store operation Store.Hold runs.
type HoldKind string

// The operations that can be held open: the writers a claimer must never wait for.
const (
	HoldClaim   HoldKind = "claim"   // Claim(Claim)
	HoldFinish  HoldKind = "finish"  // Finish(Attempts)
	HoldEnqueue HoldKind = "enqueue" // Enqueue(Tasks)
	HoldCancel  HoldKind = "cancel"  // Cancel(TaskID, Actor)
	HoldRetry   HoldKind = "retry"   // Retry(TaskID, Actor)
	HoldDelete  HoldKind = "delete"  // DeleteTask(TaskID, Actor)
	HoldBulk    HoldKind = "bulk"    // AdvanceBulk(Bulk)
)

// HoldOp is one operation for Store.Hold; the fields of its kind are set.
type HoldOp struct {
	Kind     HoldKind
	Claim    ClaimParams
	Attempts []Attempt
	Tasks    []NewTask
	TaskID   int64
	Actor    string
	Bulk     BulkAdvance
}

// Held is an operation whose transaction is still open.
type Held interface {
	// Claimed is what a held claim returned (its tasks are locked until Release).
	Claimed() []*Task
	// Release rolls the transaction back and gives its connection up. It is
	// safe to call more than once.
	Release(ctx context.Context) error
}

// CheckHold validates op before a dialect runs it.
func CheckHold(op HoldOp) error {
	switch op.Kind {
	case HoldClaim:
		return CheckClaim(op.Claim)
	case HoldFinish:
		if len(op.Attempts) == 0 {
			return &ValidationError{Field: "attempts", Reason: "is empty: a held finish needs an attempt"}
		}
		for _, a := range op.Attempts {
			if err := CheckFinishOutcome(a.Outcome); err != nil {
				return err
			}
		}
	case HoldEnqueue:
		if len(op.Tasks) == 0 {
			return &ValidationError{Field: "tasks", Reason: "is empty: a held enqueue needs a task"}
		}
	case HoldCancel, HoldRetry, HoldDelete:
		if op.TaskID <= 0 {
			return &ValidationError{Field: "task_id", Reason: "must name a task"}
		}
		if op.Actor == "" {
			return &ValidationError{Field: "actor", Reason: "is empty: every change records who made it"}
		}
	case HoldBulk:
		return CheckBulkAdvance(op.Bulk)
	default:
		return &ValidationError{Field: "kind", Reason: fmt.Sprintf("%q is not one of claim, finish, enqueue, cancel, retry, delete, bulk", op.Kind)}
	}
	return nil
}
