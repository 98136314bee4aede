package queue

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A schedule that fans out (docs/SCHEDULES.md, "Fan-out") keeps target
// selectors in its template instead of one target: names ("db1") and tags
// ("tag:prod"). Tags live in the nodes' configuration, not in the store, so
// each fire's selectors are resolved by the node that fires it, among the
// targets the live nodes publish (the directory POST /api/tasks resolves
// against), and the store writes what it was given: one task per target, in
// a fan-out group of their own, in the fire's transaction.

// FanOutPrefix starts the name of every fan-out's group.
const FanOutPrefix = "fanout-"

// TagPrefix is the prefix of a selector that names a tag: "tag:prod".
const TagPrefix = "tag:"

// MaxFanOut bounds the targets of one fan-out: its page lists every task in
// one bounded read.
const MaxFanOut = 1000

// MaxScheduleSelectors bounds the selectors a schedule keeps (its column's size).
const MaxScheduleSelectors = 50

// IsFanOutGroup reports whether group is a fan-out's.
func IsFanOutGroup(group string) bool { return strings.HasPrefix(group, FanOutPrefix) }

// NewFanOutGroup names a new fan-out's group: fanout-<UTC time>-<random>, so
// the groups page sorts fan-outs by when they were made.
func NewFanOutGroup(at time.Time) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return FanOutPrefix + at.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}

// CheckSelectors refuses selectors that are not target names or tag:NAME,
// repeated, or more than max of them; an empty list is fine (no fan-out).
func CheckSelectors(field string, sels []string, max int) error {
	if len(sels) > max {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("names %d targets or tags: give at most %d (a tag stands for many)", len(sels), max)}
	}
	for i, sel := range sels {
		if tag, ok := strings.CutPrefix(sel, TagPrefix); ok {
			if tag == "" || CheckTargetName(field, tag) != nil {
				return &ValidationError{Field: field, Reason: fmt.Sprintf("%q names no tag: write tag:NAME", sel)}
			}
		} else if sel == "" {
			return &ValidationError{Field: field, Reason: "holds an empty name: name targets (\"db1\") or tags (\"tag:prod\")"}
		} else if err := CheckTargetName(field, sel); err != nil {
			return err
		}
		if slices.Contains(sels[:i], sel) {
			return &ValidationError{Field: field, Reason: fmt.Sprintf("names %q twice", sel)}
		}
	}
	return nil
}

// CheckFanOutTask refuses what a fan-out's template may not carry beside its
// targets, and a limit out of range (0: every target at once).
func CheckFanOutTask(t NewTask, limit int) error {
	switch {
	case t.Target != "":
		return &ValidationError{Field: "target", Reason: "and targets are both set: give one target, or a list of them for a fan-out"}
	case t.Group != "":
		return &ValidationError{Field: "group", Reason: "is set on a fan-out, which is a group of its own (its limit is fanout_limit): leave it out"}
	case t.Chain != "":
		return &ValidationError{Field: "chain", Reason: "is set on a fan-out: a fan-out's tasks run side by side, one per target; leave it out"}
	case t.UniqueKey != "":
		return &ValidationError{Field: "unique_key", Reason: "is set on a fan-out: one key would make every task but the first a duplicate; leave it out"}
	case t.Transactional:
		return &ValidationError{Field: "transactional", Reason: "is set on a fan-out: a transactional task runs only on the store; leave it out"}
	case limit < 0 || limit > MaxFanOut:
		return &ValidationError{Field: "fanout_limit", Reason: fmt.Sprintf("is %d: use 1 to %d servers at once, or leave it out for all", limit, MaxFanOut)}
	}
	return nil
}

// JoinSelectors is how a store keeps a schedule's selectors: one string,
// space-separated (names and tags hold no space); "" for none.
func JoinSelectors(sels []string) string { return strings.Join(sels, " ") }

// SplitSelectors reads back what JoinSelectors wrote.
func SplitSelectors(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Fields(s)
}

// FanOutFire is a fan-out a scheduler resolved for a fire (or an operator's
// Run now): the selectors it resolved (the store checks they are still the
// schedule's), the targets they matched, the new group and its limit.
type FanOutFire struct {
	Selectors []string
	Targets   []string
	Group     string
	Limit     int // how many run at once: 1 to len(Targets)
	// Err, when set, is why the firing node could not resolve the selectors
	// (a tag no live node has): a fire that would enqueue fails with it and
	// is tried again at the next look; a fire skipped by a policy does not
	// need the targets and is recorded.
	Err error
	// Steps, for a job's schedule, are the target names each step of the
	// job that fans out resolved to, by plan index (StartRun.Targets).
	Steps map[int][]string
}

// NewFanOutFire resolves a schedule's selectors with resolve, as a scheduler
// does at a fire time, into a new group at time at.
func NewFanOutFire(sels []string, limit int, at time.Time, resolve func([]string) ([]string, error)) *FanOutFire {
	f := &FanOutFire{Selectors: sels}
	names, err := resolve(sels)
	switch {
	case err != nil:
		f.Err = err
		return f
	case len(names) == 0:
		f.Err = &ValidationError{Field: "targets", Reason: fmt.Sprintf("%s matches no target of a live node", JoinSelectors(sels))}
		return f
	case len(names) > MaxFanOut:
		f.Err = &ValidationError{Field: "targets", Reason: fmt.Sprintf("names %d targets: a fan-out reaches at most %d", len(names), MaxFanOut)}
		return f
	}
	if f.Group, f.Err = NewFanOutGroup(at); f.Err != nil {
		return f
	}
	if limit <= 0 || limit > len(names) {
		limit = len(names)
	}
	f.Targets, f.Limit = names, limit
	return f
}

// FanOutTasks are the tasks of a run of a schedule that fans out, created by
// createdBy, checked against the store's body limit: one per target of f, in
// f's group. It refuses an f resolved from other selectors than the
// schedule's now, or none.
func (r ScheduleRun) FanOutTasks(createdBy string, maxBody int, f *FanOutFire) ([]NewTask, error) {
	want := JoinSelectors(r.Task.Targets)
	switch {
	case f == nil:
		return nil, fmt.Errorf("schedule %s fans out to %s: the node that started it resolved no targets", r.Name, want)
	case f.Err != nil:
		return nil, fmt.Errorf("schedule %s fans out to %s: %w", r.Name, want, f.Err)
	case JoinSelectors(f.Selectors) != want:
		return nil, fmt.Errorf("schedule %s changed its targets while it was started: try again", r.Name)
	}
	base, err := r.NewTask(createdBy, maxBody)
	if err != nil {
		return nil, err
	}
	tasks := make([]NewTask, len(f.Targets))
	for i, name := range f.Targets {
		t := base
		t.Target, t.Group = name, f.Group
		tasks[i] = t
	}
	return tasks, nil
}
