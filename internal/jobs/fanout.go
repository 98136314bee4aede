package jobs

import (
	"context"

	"readpast/internal/queue"
)

// checkStepFanOut refuses a step's fan-out (docs/JOBS.md, "A step that fans
// out") as a task fan-out is refused: bad selectors, a target beside them, a
// transactional body, a limit out of range; field names step i's fields.
func checkStepFanOut(q string, p queue.PlanStep, field func(string) string) error {
	if len(p.Targets) == 0 {
		if p.FanOutLimit != 0 {
			return &queue.ValidationError{Field: field("fanout_limit"), Reason: "is set without targets: it limits a fan-out; give targets or leave it out"}
		}
		return nil
	}
	if err := queue.CheckSelectors(field("targets"), p.Targets, queue.MaxScheduleSelectors); err != nil {
		return err
	}
	if err := queue.CheckFanOutTask(queue.StepTask(q, p, ""), p.FanOutLimit); err != nil {
		if ve, ok := err.(*queue.ValidationError); ok {
			ve.Field = field(ve.Field)
		}
		return err
	}
	return nil
}

// runTargets resolves the fan-outs of a job's plan for a run starting now
// (StartRun.Targets), with the editor's resolver.
func (e Editor) runTargets(ctx context.Context, plan []queue.PlanStep) (map[int][]string, error) {
	return queue.ResolveRunTargets(ctx, plan, e.Resolve)
}
