package queue

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// AfterAttempt decides what a task becomes when an attempt ends with outcome o
// (docs/QUEUE.md, the state machine). attempts counts the attempt that just
// ended; retryBase is the attempts made before the last manual retry. release
// is true for a graceful-shutdown release. cancelRequested is the task's flag:
// an operator asked it to stop, so it ends cancelled however the attempt ended
// (a release or a reclaim must not put it back to run again). retryIn is the
// back-off when the result is pending (0 for a release).
func AfterAttempt(o Outcome, attempts, retryBase, maxAttempts int, release, cancelRequested bool) (next State, retryIn time.Duration) {
	if cancelRequested {
		return StateCancelled, 0
	}
	if release {
		return StatePending, 0
	}
	switch o {
	case OutcomeSucceeded:
		return StateSucceeded, 0
	case OutcomeCancelled:
		return StateCancelled, 0
	}
	used := attempts - retryBase
	if used < maxAttempts {
		return StatePending, Backoff(used)
	}
	return StateFailed, 0
}

// CheckFinishOutcome returns a *ValidationError unless o may be reported by a
// worker (lost is the store's own verdict, never a worker's).
func CheckFinishOutcome(o Outcome) error {
	if !o.Valid() || o == OutcomeLost {
		return &ValidationError{Field: "outcome", Reason: fmt.Sprintf("%q is not one of succeeded, failed, timed_out, cancelled", o)}
	}
	return nil
}

// LostError is the last_error of a task whose lease ran out.
func LostError(owner string) string {
	return fmt.Sprintf("lease of %s expired: its worker stopped heartbeating (node died or lost its database connection)", owner)
}

// ChainCancelledError is the last_error of a task cancelled by its chain's failure policy.
func ChainCancelledError(chain string, taskID int64, stage int, st State) string {
	return fmt.Sprintf("chain %s: task %d at stage %d ended %s", chain, taskID, stage, st)
}

// SplitOwner splits a lease owner "node/worker" into its parts.
func SplitOwner(owner string) (node, worker string) {
	node, worker, _ = strings.Cut(owner, "/")
	return node, worker
}

// WaitInfo is what a dialect reads to explain why a pending task is not claimable.
type WaitInfo struct {
	Now          time.Time
	AvailableAt  time.Time
	Chain        string
	ChainWait    bool
	ChainStage   int // lowest unfinished stage of the chain
	ChainOpen    int // unfinished tasks at that stage
	Group        string
	GroupRunning int
	GroupMax     int
	Queue        string
	QueuePaused  bool
	QueueWorkers *int // the queue's workers setting; nil: each node's default
	QueueMax     *int
	QueueRunning int
	// WriterBusy: a transactional task holds SQLite's one writer, and
	// transactional tasks run there one at a time.
	WriterBusy bool
}

// Why renders the reasons, most fundamental first, joined by "; ". It is empty
// when nothing holds the task back.
func (w WaitInfo) Why() string {
	var r []string
	if w.QueuePaused {
		r = append(r, fmt.Sprintf("queue %s is paused", w.Queue))
	}
	if w.QueueWorkers != nil && *w.QueueWorkers == 0 {
		r = append(r, fmt.Sprintf("queue %s is set to 0 workers: no node runs its tasks until its workers are raised", w.Queue))
	}
	if w.AvailableAt.After(w.Now) {
		r = append(r, "delayed until "+w.AvailableAt.UTC().Format(time.RFC3339))
	}
	if w.ChainWait {
		r = append(r, fmt.Sprintf("waiting for stage %d of chain %s (%d unfinished)", w.ChainStage, w.Chain, w.ChainOpen))
	}
	if w.Group != "" && w.GroupRunning >= w.GroupMax {
		r = append(r, fmt.Sprintf("group %s is full (%d of %d running)", w.Group, w.GroupRunning, w.GroupMax))
	}
	if w.WriterBusy {
		r = append(r, "another transactional task holds the SQLite writer (they run one at a time there)")
	}
	if w.QueueMax != nil && w.QueueRunning >= *w.QueueMax {
		r = append(r, fmt.Sprintf("queue %s is at max_running (%d of %d running)", w.Queue, w.QueueRunning, *w.QueueMax))
	}
	return strings.Join(r, "; ")
}

// CheckClaim validates claim parameters.
func CheckClaim(p ClaimParams) error {
	if err := CheckQueueName("queue", p.Queue); err != nil {
		return err
	}
	if p.Limit < 1 || p.Limit > MaxClaimLimit {
		return &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: claim 1 to %d tasks", p.Limit, MaxClaimLimit)}
	}
	if p.LeaseDuration < time.Millisecond {
		return &ValidationError{Field: "lease_duration", Reason: fmt.Sprintf("is %s: a lease must last at least 1ms", p.LeaseDuration)}
	}
	if len(p.Targets) > MaxClaimLimit {
		return &ValidationError{Field: "targets", Reason: fmt.Sprintf("names %d targets: a node serves at most %d", len(p.Targets), MaxClaimLimit)}
	}
	for i, t := range p.Targets {
		if err := CheckTargetName("targets", t); err != nil {
			return err
		}
		// Stores read one range per target named: each once.
		if slices.Contains(p.Targets[:i], t) {
			return &ValidationError{Field: "targets", Reason: fmt.Sprintf("names target %q twice: name each target once", t)}
		}
	}
	return nil
}

// CheckQueueUpdate validates a queue settings change.
func CheckQueueUpdate(name string, u QueueUpdate) error {
	if err := CheckQueueName("name", name); err != nil {
		return err
	}
	if u.Workers != nil && (*u.Workers < 0 || *u.Workers > 1000) {
		return &ValidationError{Field: "workers", Reason: fmt.Sprintf("is %d: use 0 to 1000 per node", *u.Workers)}
	}
	if u.MaxRunning != nil && (*u.MaxRunning < 1 || *u.MaxRunning > 1000000) {
		return &ValidationError{Field: "max_running", Reason: fmt.Sprintf("is %d: use at least 1, or clear it for no limit", *u.MaxRunning)}
	}
	if u.MaxRunning != nil && u.ClearMaxRunning {
		return &ValidationError{Field: "max_running", Reason: "is both set and cleared"}
	}
	if u.DefaultTarget != nil {
		if err := CheckTargetName("default_target", *u.DefaultTarget); err != nil {
			return err
		}
	}
	if u.ResultRows != nil && (*u.ResultRows < 0 || *u.ResultRows > MaxResultRows) {
		return &ValidationError{Field: "result_rows", Reason: fmt.Sprintf("is %d: use 0 (keep no result output) to %d rows per attempt", *u.ResultRows, MaxResultRows)}
	}
	if u.Retry != nil {
		if u.ClearRetry {
			return &ValidationError{Field: "retry", Reason: "is both set and cleared"}
		}
		if err := CheckRetryPolicy("retry", *u.Retry); err != nil {
			return err
		}
	}
	return nil
}

// CheckGroupLimit validates a group limit change.
func CheckGroupLimit(name string, maxRunning int) error {
	if name == "" || len(name) > MaxNameLength {
		return &ValidationError{Field: "group", Reason: fmt.Sprintf("must be 1 to %d bytes", MaxNameLength)}
	}
	if maxRunning < 1 || maxRunning > 1000000 {
		return &ValidationError{Field: "max_running", Reason: fmt.Sprintf("is %d: a group admits at least 1 task", maxRunning)}
	}
	return nil
}

// CheckList validates list parameters and returns the effective limit. A
// filter that no queue, group, chain or schedule name can hold (a NUL,
// invalid UTF-8) is refused: a store would fail on it rather than find
// nothing.
func CheckList(p ListParams) (int, error) {
	if p.State != "" && !p.State.Valid() {
		return 0, &ValidationError{Field: "state", Reason: fmt.Sprintf("%q is not one of pending, running, succeeded, failed, cancelled", p.State)}
	}
	if p.Queue != "" {
		if err := CheckQueueName("queue", p.Queue); err != nil {
			return 0, err
		}
	}
	if p.Schedule != "" {
		if err := CheckScheduleName("schedule", p.Schedule); err != nil {
			return 0, err
		}
	}
	if err := CheckName("group", p.Group); err != nil {
		return 0, err
	}
	if err := CheckName("chain", p.Chain); err != nil {
		return 0, err
	}
	if err := checkText(p.Text); err != nil {
		return 0, err
	}
	switch {
	case p.Limit == 0:
		return 50, nil
	case p.Limit < 0 || p.Limit > 1000:
		return 0, &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: use 1 to 1000", p.Limit)}
	}
	return p.Limit, nil
}
