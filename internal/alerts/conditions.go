package alerts

import (
	"context"
	"fmt"
	"slices"
	"time"

	"readpast/internal/queue"
)

// The condition kinds' bounded reads: each reads a small, fixed set (the
// queues, the nodes, the schedules, at most maxRunningRead running tasks),
// never the history.

// maxRunningRead bounds the running tasks a long-run check reads.
const maxRunningRead = 1000

func stuckQueues(ctx context.Context, s queue.Store, r Rule, _ time.Time) ([]condition, error) {
	waits, err := s.OldestPending(ctx)
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, w := range waits {
		if len(r.Queues) > 0 && !slices.Contains(r.Queues, w.Queue) {
			continue
		}
		if waited := w.Now.Sub(w.AvailableAt); waited > time.Duration(r.Threshold) {
			out = append(out, condition{Subject: "queue " + w.Queue,
				Text: fmt.Sprintf("queue %s is stuck: its oldest pending task %d has waited %s (more than %s)",
					w.Queue, w.TaskID, waited.Round(time.Second), time.Duration(r.Threshold))})
		}
	}
	return out, nil
}

func silentNodes(ctx context.Context, s queue.Store, r Rule, _ time.Time) ([]condition, error) {
	nodes, err := s.Nodes(ctx, time.Duration(r.Threshold))
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, n := range nodes {
		if n.Gone && n.StoppedAt.IsZero() {
			out = append(out, condition{Subject: "node " + n.ID,
				Text: fmt.Sprintf("node %s (%s) has not heartbeated since %s: it died, froze or lost its database connection",
					n.ID, n.Hostname, n.HeartbeatAt.UTC().Format(time.RFC3339))})
		}
	}
	return out, nil
}

func longRunningTasks(ctx context.Context, s queue.Store, r Rule, now time.Time) ([]condition, error) {
	tasks, err := s.List(ctx, queue.ListParams{State: queue.StateRunning, Limit: maxRunningRead})
	if err != nil {
		return nil, err
	}
	medians := map[string]time.Duration{} // per schedule, read once per check
	var out []condition
	for _, t := range tasks {
		if len(r.Queues) > 0 && !slices.Contains(r.Queues, t.Queue) ||
			len(r.Schedules) > 0 && !slices.Contains(r.Schedules, t.Schedule) || t.StartedAt.IsZero() {
			continue
		}
		limit, why := time.Duration(r.Threshold), "more than "+time.Duration(r.Threshold).String()
		if r.MedianFactor > 0 && t.Schedule != "" {
			med, ok := medians[t.Schedule]
			if !ok {
				if med, err = medianRun(ctx, s, t.Schedule, r.MedianRuns); err != nil {
					return nil, err
				}
				medians[t.Schedule] = med
			}
			if med > 0 {
				limit = time.Duration(r.MedianFactor * float64(med))
				why = fmt.Sprintf("more than %g × the median of schedule %s's last runs (%s)", r.MedianFactor, t.Schedule, med.Round(time.Millisecond))
			}
		}
		if ran := now.Sub(t.StartedAt); limit > 0 && ran > limit {
			out = append(out, condition{Subject: fmt.Sprintf("task %d", t.ID),
				Text: fmt.Sprintf("task %d in queue %s has been running for %s (%s)", t.ID, t.Queue, ran.Round(time.Second), why)})
		}
	}
	return out, nil
}

// medianRun is the median duration of a schedule's last n (default 10)
// successful runs, read as one keyset page of its tasks; 0 with fewer than 3.
func medianRun(ctx context.Context, s queue.Store, sched string, n int) (time.Duration, error) {
	if n <= 0 {
		n = 10
	}
	runs, err := s.List(ctx, queue.ListParams{Schedule: sched, State: queue.StateSucceeded, Limit: n})
	if err != nil {
		return 0, err
	}
	var ds []time.Duration
	for _, t := range runs {
		if !t.StartedAt.IsZero() && t.FinishedAt.After(t.StartedAt) {
			ds = append(ds, t.FinishedAt.Sub(t.StartedAt))
		}
	}
	if len(ds) < 3 {
		return 0, nil
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func lateSchedules(ctx context.Context, s queue.Store, r Rule, now time.Time) ([]condition, error) {
	scheds, err := s.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, sc := range scheds {
		if len(r.Schedules) > 0 && !slices.Contains(r.Schedules, sc.Name) || sc.Paused || sc.NextFireAt.IsZero() {
			continue
		}
		if late := now.Sub(sc.NextFireAt); late > time.Duration(r.Threshold) {
			out = append(out, condition{Subject: "schedule " + sc.Name,
				Text: fmt.Sprintf("schedule %s stopped firing: its fire time %s is %s late (is any node running?)",
					sc.Name, sc.NextFireAt.UTC().Format(time.RFC3339), late.Round(time.Second))})
		}
	}
	return out, nil
}

func skippedSchedules(ctx context.Context, s queue.Store, r Rule, _ time.Time) ([]condition, error) {
	scheds, err := s.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, sc := range scheds {
		if len(r.Schedules) > 0 && !slices.Contains(r.Schedules, sc.Name) {
			continue
		}
		why := ""
		switch sc.LastFireOutcome {
		case queue.FireSkippedOverlap:
			why = "its previous run was still unfinished (overlap skip)"
		case queue.FireSkippedMisfire:
			why = fmt.Sprintf("%d fire times were missed while no node ran it (misfire skip)", max(sc.LastFireMissed, 1))
		default:
			continue
		}
		out = append(out, condition{Subject: "schedule " + sc.Name,
			Text: fmt.Sprintf("schedule %s skipped its fire at %s: %s", sc.Name, sc.LastFireAt.UTC().Format(time.RFC3339), why)})
	}
	return out, nil
}
