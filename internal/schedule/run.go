package schedule

import (
	"fmt"

	"readpast/internal/queue"
)

// Run is a schedule whose run a store is starting (a fire or a Run now), as
// the store read it from the row its transaction holds.
type Run struct {
	ID         int64
	Name       string
	Task       queue.ScheduleTask
	LastTaskID int64 // the schedule's latest run before this one; 0 if none
}

// NewTask is the run's task, created by createdBy, checked against the
// store's body limit (a definition saved by a node with a larger limit).
func (r Run) NewTask(createdBy string, maxBody int) (queue.NewTask, error) {
	t, err := r.Task.NewTask(createdBy).Normalize(maxBody)
	if err != nil {
		return queue.NewTask{}, fmt.Errorf("the task of schedule %s: %w", r.Name, err)
	}
	return t, nil
}

// Fired is what a fire the store won did, given the outcome it recorded:
// enqueue creates the task (as created by createdBy) when the outcome is
// FireEnqueued; under FireSkippedOverlap the unfinished latest run is named.
func (r Run) Fired(outcome queue.FireOutcome, enqueue func(createdBy string) (int64, error)) (queue.Fired, error) {
	out := queue.Fired{Won: true, Outcome: outcome}
	var err error
	switch outcome {
	case queue.FireEnqueued:
		out.Queue = r.Task.Queue
		out.TaskID, err = enqueue(queue.ScheduleCreatedBy(r.Name))
	case queue.FireSkippedOverlap:
		out.TaskID = r.LastTaskID
	}
	return out, err
}
