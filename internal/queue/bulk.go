package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// BulkStore keeps bulk operations (docs/QUEUE.md, "Bulk operations"): one
// row per request to cancel, retry or delete every task of a selection,
// which one node at a time claims and advances in bounded batches, with a
// keyset cursor, so that the work survives the node that did it. The tasks
// themselves change by the one-task operations (Cancel, Retry, DeleteTask),
// each its own short transaction: a batch never holds more than one task's
// locks, so claimers never wait for it.
type BulkStore interface {
	// CreateBulk writes a new bulk operation, with its audit row (the
	// selection and the count of tasks that matched), and returns its id. Its
	// cursor starts past the newest task: tasks enqueued later are not in it.
	CreateBulk(ctx context.Context, b NewBulk) (int64, error)
	// ClaimBulk leases the oldest unfinished bulk operation whose lease is
	// free or expired to owner, with a new token, and returns it; nil when
	// none waits. Claimers skip an operation another one is claiming.
	ClaimBulk(ctx context.Context, owner string, lease time.Duration) (*BulkOp, error)
	// AdvanceBulk records a batch done under a's lease: the cursor, the counts
	// added, the lease extended; with Finished, the end, audited with the
	// counts. ErrLeaseLost when a.Token is no longer the operation's lease.
	AdvanceBulk(ctx context.Context, a BulkAdvance) error
	// GetBulk returns one bulk operation; ErrNotFound if none.
	GetBulk(ctx context.Context, id int64) (*BulkOp, error)
	// Bulks returns bulk operations newest first, the ones with an id below
	// before (all when 0), at most limit (1 to MaxBulkPage).
	Bulks(ctx context.Context, before int64, limit int) ([]BulkOp, error)
	// DeleteTask deletes a finished task and its execution-log rows, audited
	// as actor's; the finished counts shrink with it. ErrNotFound when there
	// is no such task, ErrInvalidState while it is pending or running.
	DeleteTask(ctx context.Context, id int64, actor string) error
	// CountTasks counts the tasks List would page through for p (p.Before and
	// p.Limit aside), up to max: a bounded count, max when there are more.
	// With p.Text, it counts those whose body contains the text among max
	// tasks of the other filters (the newest, on SQLite and PostgreSQL).
	CountTasks(ctx context.Context, p ListParams, max int) (int64, error)
	// Search is a text search that does not grow with history: among the
	// window newest tasks of p's other filters below p.Before (the ids List
	// would page through), those whose body contains p.Text, newest first, at
	// most p.Limit. scannedTo is the lowest id of the window read, where the
	// next search goes on (p.Before), or 0 when the window reached the oldest
	// task of the filters. The text is matched as written (no wildcards),
	// without regard to ASCII case on SQLite and PostgreSQL, by the
	// database's collation on SQL Server.
	Search(ctx context.Context, p ListParams, window int) (tasks []*Task, scannedTo int64, err error)
}

// Text search bounds.
const (
	// SearchWindow is how many of a filter's newest tasks one page of a text
	// search reads.
	SearchWindow = 10_000
	// MaxSearchWindow bounds Search's window.
	MaxSearchWindow = 100_000
	// MaxSearchText bounds the text searched for.
	MaxSearchText = 200
)

// LikeContains is the LIKE pattern (ESCAPE '\') of a text contained
// anywhere: its %, _, [ and \ stand for themselves.
func LikeContains(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`, `[`, `\[`)
	return "%" + r.Replace(text) + "%"
}

// CheckSearch validates a search's text and window.
func CheckSearch(p ListParams, window int) (int, error) {
	if p.Text == "" {
		return 0, &ValidationError{Field: "text", Reason: "is empty: give the text to search the bodies for"}
	}
	if window < 1 || window > MaxSearchWindow {
		return 0, &ValidationError{Field: "window", Reason: fmt.Sprintf("is %d: use 1 to %d", window, MaxSearchWindow)}
	}
	return CheckList(p)
}

// checkText validates a text filter.
func checkText(text string) error {
	switch {
	case len(text) > MaxSearchText:
		return &ValidationError{Field: "text", Reason: fmt.Sprintf("is %d bytes: search for at most %d", len(text), MaxSearchText)}
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return &ValidationError{Field: "text", Reason: "holds a NUL or invalid UTF-8, which no body can"}
	}
	return nil
}

// BulkAction is what a bulk operation does to each task it selects.
type BulkAction string

// The bulk actions: the one-task operations of the same name.
const (
	BulkCancel BulkAction = "cancel"
	BulkRetry  BulkAction = "retry"
	BulkDelete BulkAction = "delete"
)

// Valid reports whether a is one of the bulk actions.
func (a BulkAction) Valid() bool { return a == BulkCancel || a == BulkRetry || a == BulkDelete }

// Bulk limits.
const (
	// MaxBulkIDs bounds a selection by ids.
	MaxBulkIDs = 1000
	// MaxBulkPage bounds one page of Bulks.
	MaxBulkPage = 100
	// MaxBulkCount bounds CountTasks' max.
	MaxBulkCount = 1_000_000
)

// TaskFilter is a selection of tasks by the filters of the tasks list (GET
// /api/tasks, the tasks page), under the same names: what a bulk operation
// stores and pages through. A filter the list gains is added here, in Params
// and FilterOf, and the list's parameter reads it.
type TaskFilter struct {
	State    State  `json:"state,omitempty"`
	Queue    string `json:"queue,omitempty"`
	Group    string `json:"group,omitempty"`
	Chain    string `json:"chain,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	Text     string `json:"text,omitempty"` // the body contains it (a bounded search: BulkStore.Search)
}

// Params is the list page of f below the id before, of at most limit tasks.
func (f TaskFilter) Params(before int64, limit int) ListParams {
	return ListParams{State: f.State, Queue: f.Queue, Group: f.Group, Chain: f.Chain, Schedule: f.Schedule, Text: f.Text,
		Before: before, Limit: limit}
}

// FilterOf is the filter of a list page.
func FilterOf(p ListParams) TaskFilter {
	return TaskFilter{State: p.State, Queue: p.Queue, Group: p.Group, Chain: p.Chain, Schedule: p.Schedule, Text: p.Text}
}

// BulkSelection is the tasks a bulk operation acts on: a filter, or ids.
// It is stored as JSON, as the API takes it.
type BulkSelection struct {
	Filter *TaskFilter `json:"filter,omitempty"`
	IDs    []int64     `json:"ids,omitempty"`
}

// CheckBulkSelection refuses a selection that is neither a filter nor ids,
// or both, or whose filter the list would refuse.
func CheckBulkSelection(s BulkSelection) error {
	switch {
	case s.Filter == nil && len(s.IDs) == 0:
		return &ValidationError{Field: "filter", Reason: `is missing: give {"filter": {...}} (the tasks list's filters) or {"ids": [...]}`}
	case s.Filter != nil && len(s.IDs) > 0:
		return &ValidationError{Field: "ids", Reason: "are given with a filter: give one or the other"}
	case len(s.IDs) > MaxBulkIDs:
		return &ValidationError{Field: "ids", Reason: fmt.Sprintf("has %d ids: give at most %d, or a filter", len(s.IDs), MaxBulkIDs)}
	}
	for _, id := range s.IDs {
		if id <= 0 {
			return &ValidationError{Field: "ids", Reason: fmt.Sprintf("has %d: a task id is a positive number", id)}
		}
	}
	if s.Filter != nil {
		if _, err := CheckList(s.Filter.Params(0, 0)); err != nil {
			return err
		}
	}
	return nil
}

// String is the selection's JSON, as stored and audited.
func (s BulkSelection) String() string {
	b, _ := json.Marshal(s) // plain strings and numbers: cannot fail
	return string(b)
}

// ParseBulkSelection reads a stored selection back.
func ParseBulkSelection(text string) (BulkSelection, error) {
	var s BulkSelection
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return s, fmt.Errorf("reading a bulk operation's selection %q: %w", text, err)
	}
	return s, nil
}

// NewBulk is a bulk operation to create.
type NewBulk struct {
	Action    BulkAction
	Selection BulkSelection
	Matched   int64 // the tasks that matched when it was asked (a bounded count)
	Actor     string
}

// CheckNewBulk validates a bulk operation before a store writes it.
func CheckNewBulk(b NewBulk) error {
	if !b.Action.Valid() {
		return &ValidationError{Field: "action", Reason: fmt.Sprintf("%q is not one of cancel, retry, delete", b.Action)}
	}
	if b.Matched < 0 {
		return &ValidationError{Field: "matched", Reason: fmt.Sprintf("is %d: a count is not negative", b.Matched)}
	}
	if b.Actor == "" {
		return &ValidationError{Field: "actor", Reason: "is empty: a bulk operation records who asked for it"}
	}
	return CheckBulkSelection(b.Selection)
}

// BulkOp is a bulk operation as stored.
type BulkOp struct {
	ID        int64
	Action    BulkAction
	Selection string // BulkSelection's JSON
	Matched   int64  // the count when it was asked
	Done      int64  // tasks the action changed
	Skipped   int64  // tasks selected that it did not apply to (already finished, gone)
	// Cursor: the next batch reads tasks with ids below it.
	Cursor         int64
	CreatedAt      time.Time
	CreatedBy      string
	LeaseOwner     string
	LeaseToken     int64
	LeaseExpiresAt *time.Time
	UpdatedAt      time.Time
	FinishedAt     *time.Time
	Error          string // why it stopped before its end
}

// Finished reports whether the operation has ended.
func (b BulkOp) Finished() bool { return b.FinishedAt != nil }

// BulkAdvance is one batch of a bulk operation done under its lease.
type BulkAdvance struct {
	ID, Token     int64
	Cursor        int64 // the next batch reads below this id
	Done, Skipped int64 // added by this batch
	Lease         time.Duration
	Finished      bool
	Error         string // with Finished: why it stopped before its end
}

// CheckBulkAdvance validates an advance.
func CheckBulkAdvance(a BulkAdvance) error {
	switch {
	case a.ID <= 0 || a.Token <= 0:
		return &ValidationError{Field: "id", Reason: "must name a claimed bulk operation"}
	case a.Cursor < 0 || a.Done < 0 || a.Skipped < 0:
		return &ValidationError{Field: "cursor", Reason: "the cursor and counts are not negative"}
	case !a.Finished && a.Lease <= 0:
		return &ValidationError{Field: "lease", Reason: "must be positive while the operation goes on"}
	}
	return nil
}

// CheckBulkClaim validates a claim of a bulk operation.
func CheckBulkClaim(owner string, lease time.Duration) error {
	if owner == "" {
		return &ValidationError{Field: "owner", Reason: "is empty: name the node that claims"}
	}
	if lease <= 0 {
		return &ValidationError{Field: "lease", Reason: fmt.Sprintf("is %s: it must be positive", lease)}
	}
	return nil
}

// CheckBulkPage validates a page of Bulks and returns its limit.
func CheckBulkPage(before int64, limit int) (int, error) {
	switch {
	case before < 0:
		return 0, &ValidationError{Field: "cursor", Reason: fmt.Sprintf("is %d: give the next_cursor of a page", before)}
	case limit == 0:
		return 20, nil
	case limit < 0 || limit > MaxBulkPage:
		return 0, &ValidationError{Field: "limit", Reason: fmt.Sprintf("is %d: use 1 to %d", limit, MaxBulkPage)}
	}
	return limit, nil
}

// CheckCount validates a bounded count.
func CheckCount(p ListParams, max int) error {
	if max < 1 || max > MaxBulkCount {
		return &ValidationError{Field: "max", Reason: fmt.Sprintf("is %d: use 1 to %d", max, MaxBulkCount)}
	}
	_, err := CheckList(ListParams{State: p.State, Queue: p.Queue, Group: p.Group, Chain: p.Chain, Schedule: p.Schedule, Text: p.Text})
	return err
}

// BulkAuditDetail is the detail of a bulk operation's audit row at its start.
func BulkAuditDetail(b NewBulk) string {
	return fmt.Sprintf("%s matching %d", b.Selection, b.Matched)
}

// BulkDoneDetail is the detail of its audit row at its end.
func BulkDoneDetail(done, skipped int64, errText string) string {
	s := fmt.Sprintf("done %d, skipped %d", done, skipped)
	if errText != "" {
		s += ": " + errText
	}
	return s
}

// CheckTaskAction validates a one-task operation's task and actor.
func CheckTaskAction(id int64, actor string) error {
	if id <= 0 {
		return &ValidationError{Field: "id", Reason: fmt.Sprintf("is %d: a task id is a positive number", id)}
	}
	if actor == "" {
		return &ValidationError{Field: "actor", Reason: "is empty: every change records who made it"}
	}
	return nil
}

// NotFinished is the error of an operation on finished tasks given an
// unfinished one.
func NotFinished(id int64, st State) error {
	return fmt.Errorf("%w: task %d is %s; only a finished task (succeeded, failed, cancelled) can be deleted: cancel it first", ErrInvalidState, id, st)
}
