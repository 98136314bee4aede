package queue

import (
	"context"
	"fmt"
)

// A step that fans out (docs/JOBS.md, "A step that fans out") runs its body
// once per target, its tasks in a fan-out group of their own; the step ends
// when all of them have ended, succeeded when every one succeeded and failed
// otherwise (Central Management Server's multi-server query), and then the
// run follows on_success or on_failure once. The run row counts the step's
// unfinished and failed tasks; each task's end decrements them in the
// transaction that records it, under the run row's lock, and the end that
// brings the count to zero follows the plan.

// FanOutStepGroup names the group of the fan-out of a run's step execution
// number n (its steps_run): one group per execution, so a step run twice by
// a go-to loop has two.
func FanOutStepGroup(runID int64, n int) string {
	return fmt.Sprintf("%srun%d-%d", FanOutPrefix, runID, n)
}

// ResolveRunTargets resolves the selectors of each step of plan that fans
// out with resolve, as the node starting a run does, into StartRun.Targets.
// A step whose selectors match no target, or too many, is refused.
func ResolveRunTargets(ctx context.Context, plan []PlanStep, resolve func(context.Context, []string) ([]string, error)) (map[int][]string, error) {
	var out map[int][]string
	for i, s := range plan {
		if len(s.Targets) == 0 {
			continue
		}
		if resolve == nil {
			return nil, fmt.Errorf("step %s fans out to %s, but this node cannot resolve targets", s.Name, JoinSelectors(s.Targets))
		}
		names, err := resolve(ctx, s.Targets)
		switch {
		case err != nil:
			return nil, fmt.Errorf("step %s fans out to %s: %w", s.Name, JoinSelectors(s.Targets), err)
		case len(names) == 0:
			return nil, &ValidationError{Field: "targets", Reason: fmt.Sprintf("step %s fans out to %s, which matches no target of a live node", s.Name, JoinSelectors(s.Targets))}
		case len(names) > MaxFanOut:
			return nil, &ValidationError{Field: "targets", Reason: fmt.Sprintf("step %s fans out to %d targets: a fan-out reaches at most %d", s.Name, len(names), MaxFanOut)}
		}
		if out == nil {
			out = map[int][]string{}
		}
		out[i] = names
	}
	return out, nil
}

// StepFanOutEnd is the state a step that fans out ended in, once its last
// task has ended: succeeded when none of its tasks failed.
func StepFanOutEnd(failed int) State {
	if failed > 0 {
		return StateFailed
	}
	return StateSucceeded
}

// RunPlan is the plan a run of job starts with: plan with each step that
// fans out given the target names it resolved to (StartRun.Targets). A step
// that fans out and was not resolved is refused: its tasks would go nowhere.
func RunPlan(job string, plan []PlanStep, targets map[int][]string) ([]PlanStep, error) {
	out := make([]PlanStep, len(plan))
	for i, s := range plan {
		if len(s.Targets) > 0 {
			names := targets[i]
			if len(names) == 0 {
				return nil, fmt.Errorf("job %s: step %s fans out to %s, but the node starting the run resolved no targets for it: start it again", job, s.Name, JoinSelectors(s.Targets))
			}
			s.Targets = names
		}
		out[i] = s
	}
	return out, nil
}
