package queue

import (
	"fmt"
	"time"
)

// What a ScheduleStore is given to write. The schedule package makes these
// values (schedule.Editor): it checks the definition and the actor, fills in
// the defaults and computes the next fire time, so a store writes them as
// they are and every dialect keeps one set of rules.

// NewSchedule is a new schedule as a store writes it.
type NewSchedule struct {
	// Def is checked, its defaults filled in (schedule.Prepare).
	Def ScheduleDef
	// NextFireAt is its first fire time; zero while paused.
	NextFireAt time.Time
	// Actor is who creates it, for created_by, updated_by and the audit row.
	Actor string
}

// ScheduleReplace is a change of a stored schedule as a store writes it: Def
// and NextFireAt replace the definition and the next fire time, only while
// the schedule is still at Version (a fire or another change in between
// makes the write a no-op, and the editor reads again).
type ScheduleReplace struct {
	ID      int64
	Version int64
	Name    string // for the audit row and messages
	// Def is checked, its defaults filled in (schedule.Prepare).
	Def ScheduleDef
	// NextFireAt is the next fire time afterwards; zero while paused.
	NextFireAt time.Time
	// Actor, Action and Detail make the audit row: who, what
	// (ScheduleUpdate.Action) and the change (ScheduleUpdate.Describe).
	Actor  string
	Action string
	Detail string
}

// ScheduleRun is a schedule whose run a store is starting (a fire or a Run
// now), as the store read it from the row its transaction holds.
type ScheduleRun struct {
	ID         int64
	Name       string
	Task       ScheduleTask
	LastTaskID int64  // the schedule's latest run before this one; 0 if none
	Job        string // a job's schedule: a run of the job, not Task
}

// StartRun is the run of the job r.Job a fire or Run now of r starts, in its
// transaction, as actor, with the targets of its steps that fan out that the
// firing node resolved (fan.Steps; fan nil: none).
func (r ScheduleRun) StartRun(actor string, fan *FanOutFire) StartRun {
	s := StartRun{Job: r.Job, Trigger: TriggerSchedule, Actor: actor}
	if fan != nil {
		s.Targets = fan.Steps
	}
	return s
}

// NewTask is the run's task, created by createdBy, checked against the
// store's body limit maxBody: a definition saved by a node with a larger
// limit is refused here, inside the run's transaction, rather than enqueued.
func (r ScheduleRun) NewTask(createdBy string, maxBody int) (NewTask, error) {
	t, err := r.Task.NewTask(createdBy).Normalize(maxBody)
	if err != nil {
		return NewTask{}, fmt.Errorf("the task of schedule %s: %w", r.Name, err)
	}
	return t, nil
}

// Fired is what a fire the store won did, given the outcome it recorded:
// enqueue creates the task (as created by createdBy) when the outcome is
// FireEnqueued; under FireSkippedOverlap the unfinished latest run is named.
func (r ScheduleRun) Fired(outcome FireOutcome, enqueue func(createdBy string) (int64, error)) (Fired, error) {
	out := Fired{Won: true, Outcome: outcome}
	var err error
	switch outcome {
	case FireEnqueued:
		out.Queue = r.Task.Queue
		out.TaskID, err = enqueue(ScheduleCreatedBy(r.Name))
	case FireSkippedOverlap:
		out.TaskID = r.LastTaskID
	}
	return out, err
}
