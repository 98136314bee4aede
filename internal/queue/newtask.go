package queue

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
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
	// Target names the target the body runs on (docs/TARGETS.md): "" runs it
	// on its queue's default target, else on the node's default. Only a node
	// that serves the target claims the task. A transactional task runs on
	// the store: its target is "" or TargetStore.
	Target string
	// Retry, when set, is the task's wait before a retry (RetryPolicy); nil:
	// its queue's, else Backoff.
	Retry *RetryPolicy
	// Name, optional, is shown instead of the body's first line and is
	// searched with it: at most MaxTaskName characters of text.
	Name string
}

// TargetStore is the name every node gives the store's own database as a
// target (target.StoreName).
const TargetStore = "store"

var targetNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckTargetName returns a *ValidationError when name cannot name a target
// (1–64 letters, digits, '_', '.' or '-'; "" is none).
func CheckTargetName(field, name string) error {
	if name == "" {
		return nil
	}
	if !targetNamePattern.MatchString(name) || strings.Trim(name, ".") == "" {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%q is not a target name: use 1 to 64 letters, digits, '_', '.' or '-'", name)}
	}
	return nil
}

var queueNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// ValidQueueName reports whether name may name a queue (or a schedule): 1–64
// letters, digits or _ . : -, and not only dots ("." and ".." in a URL path
// mean the directory and its parent, not a name).
func ValidQueueName(name string) bool {
	return queueNamePattern.MatchString(name) && strings.Trim(name, ".") != ""
}

// CheckQueueName returns a *ValidationError when name cannot name a queue.
func CheckQueueName(field, name string) error { return checkName("queue", field, name) }

// checkName checks a queue's or a schedule's name (kind) for field.
func checkName(kind, field, name string) error {
	if !ValidQueueName(name) {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%q is not a %s name: use 1 to 64 letters, digits, '_', '.', ':' or '-', not only dots", name, kind)}
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
	case strings.IndexByte(t.Body, 0) >= 0:
		return bad("body", "holds a NUL byte (U+0000) at byte %d: no dialect stores one in text; remove it", strings.IndexByte(t.Body, 0))
	}
	if err := sqlscript.Check(t.Body); errors.Is(err, sqlscript.ErrNoBatch) {
		return bad("body", "%v; give the SQL the task runs", err)
	} else if err != nil {
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
	if err := CheckName("group", t.Group); err != nil {
		return NewTask{}, err
	}
	if err := CheckName("chain", t.Chain); err != nil {
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
	} else if err := CheckMaxAttempts(t.MaxAttempts); err != nil {
		return NewTask{}, err
	}
	if t.Timeout < 0 {
		return bad("timeout", "is negative (%s)", t.Timeout)
	}
	if t.Timeout > MaxTimeout {
		_, err := TimeoutSeconds("timeout", t.Timeout.Seconds())
		return NewTask{}, err
	}
	if t.Timeout > 0 && t.Timeout < time.Millisecond {
		return bad("timeout", "is %s: give at least 1ms, or none for no limit", t.Timeout)
	}
	if t.Timeout%time.Millisecond != 0 {
		t.Timeout = t.Timeout.Round(time.Millisecond)
	}
	if err := CheckName("created_by", t.CreatedBy); err != nil {
		return NewTask{}, err
	}
	if err := CheckName("unique_key", t.UniqueKey); err != nil {
		return NewTask{}, err
	}
	if err := CheckTargetName("target", t.Target); err != nil {
		return NewTask{}, err
	}
	if t.Transactional && t.Target != "" && t.Target != TargetStore {
		return bad("target", "is %q but the task is transactional: its body commits with its completion in the store's transaction, so it runs only on the store (target %q); drop transactional or the target", t.Target, TargetStore)
	}
	if t.Retry != nil {
		if err := CheckRetryPolicy("retry", *t.Retry); err != nil {
			return NewTask{}, err
		}
		p := RetryPolicy{Interval: t.Retry.Interval.Round(time.Millisecond), Cap: t.Retry.Cap.Round(time.Millisecond)}
		t.Retry = &p
	}
	if err := CheckTaskName(t.Name); err != nil {
		return NewTask{}, err
	}
	return t, nil
}

// MaxTaskName bounds a task's name, in characters.
const MaxTaskName = 200

// CheckTaskName refuses a task name that is not text of at most MaxTaskName
// characters without control characters ("" is no name).
func CheckTaskName(name string) error {
	if n := utf8.RuneCountInString(name); n > MaxTaskName {
		return &ValidationError{Field: "name", Reason: fmt.Sprintf("is %d characters: give at most %d", n, MaxTaskName)}
	}
	if len(name) > 4*MaxTaskName { // CheckName's byte limit is for names of 128 bytes
		return &ValidationError{Field: "name", Reason: "is too long"}
	}
	for i, r := range name {
		if r == utf8.RuneError || r == 0 || (r != '\t' && (r < 0x20 || r == 0x7f)) {
			return &ValidationError{Field: "name", Reason: fmt.Sprintf("holds a control character or invalid UTF-8 at byte %d: a name is one line of text", i)}
		}
	}
	if isBlank(name) && name != "" {
		return &ValidationError{Field: "name", Reason: "is only white space"}
	}
	return nil
}

// CheckMaxAttempts returns a *ValidationError when n is not an attempt budget
// (1 to MaxAttemptsLimit). NewTask's zero value means DefaultMaxAttempts, so a
// caller that can tell a field left out from one given as 0 (the API, the
// form) checks a given value here: 0 is refused, as the docs say.
func CheckMaxAttempts(n int) error {
	if n < 1 || n > MaxAttemptsLimit {
		return &ValidationError{Field: "max_attempts", Reason: fmt.Sprintf("is %d: use 1 to %d, or leave it out for %d", n, MaxAttemptsLimit, DefaultMaxAttempts)}
	}
	return nil
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

// CheckName returns a *ValidationError when v cannot be stored as sent as a
// name (group, chain, unique key, actor; "" is no name): longer than
// MaxNameLength bytes, only white space, not UTF-8, or holding a control
// character other than tab (a NUL cannot be stored in text on PostgreSQL; a
// line break would forge lines where names are printed).
func CheckName(field, v string) error {
	bad := func(format string, args ...any) error {
		return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(v) > MaxNameLength:
		return bad("is longer than %d bytes", MaxNameLength)
	case !utf8.ValidString(v):
		return bad("is not valid UTF-8 text")
	case v != "" && isBlank(v):
		return bad("is only white space")
	}
	for i, r := range v {
		switch {
		case r == 0:
			return bad("holds a NUL byte (U+0000) at byte %d: names are text without control characters", i)
		case r != '\t' && (r < 0x20 || r == 0x7f):
			return bad("holds the control character U+%04X at byte %d: names are text without control characters", r, i)
		}
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
