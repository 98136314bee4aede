package queue

import (
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"readpast/internal/sqlscript"
)

// Defaults of SPEC §3.
const (
	DefaultQueue        = "default"
	DefaultPriority     = 100
	DefaultMaxAttempts  = 3
	DefaultMaxBodyBytes = 1 << 20
	MaxPriority         = 32767 // smallint
	MaxStage            = 1<<31 - 1
	MaxAttemptsLimit    = 1000
	MaxNameLength       = 128
)

// NewTask is what a caller asks to enqueue. Zero values take the defaults of
// SPEC §3; Priority is a pointer because 0 is a valid (the most urgent) priority.
type NewTask struct {
	Queue             string
	Body              string
	Priority          *int
	Delay             time.Duration // relative to the store's clock; excludes AvailableAt
	AvailableAt       time.Time     // absolute; excludes Delay
	Group             string
	Chain             string
	Stage             int
	MaxAttempts       int           // 0: DefaultMaxAttempts
	Timeout           time.Duration // 0: no limit
	Transactional     bool
	ContinueOnFailure bool // applies to the whole chain; set it on any task of the chain
	CreatedBy         string
	// UniqueKey, when set, makes the enqueue a no-op while an unfinished task
	// of the same queue has the same key (Enqueued.Duplicate).
	UniqueKey string
}

var queueNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// ValidQueueName reports whether name may name a queue: 1–64 letters, digits or _ . : -
func ValidQueueName(name string) bool { return queueNamePattern.MatchString(name) }

// CheckQueueName returns a *ValidationError when name cannot name a queue.
func CheckQueueName(field, name string) error {
	if !ValidQueueName(name) {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%q is not a queue name: use 1 to 64 letters, digits, '_', '.', ':' or '-'", name)}
	}
	return nil
}

// Normalize checks t and returns a copy with defaults filled in. maxBody is the
// body size limit in bytes (0: DefaultMaxBodyBytes). The error is a
// *ValidationError naming the field.
func (t NewTask) Normalize(maxBody int) (NewTask, error) {
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	bad := func(field, format string, args ...any) (NewTask, error) {
		return NewTask{}, &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if t.Queue == "" {
		t.Queue = DefaultQueue
	}
	if err := CheckQueueName("queue", t.Queue); err != nil {
		return NewTask{}, err
	}
	switch {
	case isBlank(t.Body):
		return bad("body", "is empty: give the SQL the task runs")
	case len(t.Body) > maxBody:
		return bad("body", "is %d bytes, over the limit of %d bytes", len(t.Body), maxBody)
	case !utf8.ValidString(t.Body):
		return bad("body", "is not valid UTF-8 text")
	}
	if err := sqlscript.Check(t.Body); err != nil {
		return bad("body", "has a GO line sqlcmd would refuse: %v", err)
	}
	if t.Priority == nil {
		p := DefaultPriority
		t.Priority = &p
	} else if p := *t.Priority; p < 0 || p > MaxPriority {
		return bad("priority", "is %d: use 0 (most urgent) to %d", p, MaxPriority)
	}
	if t.Delay < 0 {
		return bad("delay", "is negative (%s)", t.Delay)
	}
	if t.Delay > 0 && !t.AvailableAt.IsZero() {
		return bad("available_at", "and delay are both set: give one of them")
	}
	if err := checkName("group", t.Group); err != nil {
		return NewTask{}, err
	}
	if err := checkName("chain", t.Chain); err != nil {
		return NewTask{}, err
	}
	if t.Stage < 0 || t.Stage > MaxStage {
		return bad("stage", "is %d: use 0 to %d", t.Stage, MaxStage)
	}
	if t.Chain == "" && t.Stage != 0 {
		return bad("stage", "is set but chain is empty: a stage orders tasks within a chain")
	}
	if t.Chain == "" && t.ContinueOnFailure {
		return bad("continue_on_failure", "is set but chain is empty: it is a chain's failure policy")
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = DefaultMaxAttempts
	} else if t.MaxAttempts < 1 || t.MaxAttempts > MaxAttemptsLimit {
		return bad("max_attempts", "is %d: use 1 to %d", t.MaxAttempts, MaxAttemptsLimit)
	}
	if t.Timeout < 0 {
		return bad("timeout", "is negative (%s)", t.Timeout)
	}
	if t.Timeout%time.Millisecond != 0 {
		t.Timeout = t.Timeout.Round(time.Millisecond)
	}
	if len(t.CreatedBy) > MaxNameLength {
		return bad("created_by", "is longer than %d bytes", MaxNameLength)
	}
	if err := checkName("unique_key", t.UniqueKey); err != nil {
		return NewTask{}, err
	}
	return t, nil
}

// NormalizeAll checks every task; the error names the task's position when more
// than one is given. Nothing is to be written when it returns an error.
func NormalizeAll(tasks []NewTask, maxBody int) ([]NewTask, error) {
	if len(tasks) == 0 {
		return nil, &ValidationError{Field: "tasks", Reason: "is empty: give at least one task"}
	}
	out := make([]NewTask, len(tasks))
	for i, t := range tasks {
		n, err := t.Normalize(maxBody)
		if err != nil {
			if ve, ok := err.(*ValidationError); ok && len(tasks) > 1 {
				ve.Field = fmt.Sprintf("tasks[%d].%s", i, ve.Field)
			}
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func checkName(field, v string) error {
	if len(v) > MaxNameLength {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("is longer than %d bytes", MaxNameLength)}
	}
	if v != "" && isBlank(v) {
		return &ValidationError{Field: field, Reason: "is only white space"}
	}
	return nil
}

func isBlank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}
