package alerts

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"readpast/internal/ops"
	"readpast/internal/queue"
)

// The condition kinds of jobs and named targets (docs/ALERTS.md). Each reads
// what is bounded by the number of jobs or nodes, never the history: the
// jobs with their latest run, one keyset page of a job's runs for its
// median, and the nodes' rows for the targets they serve.

// failedJobs finds the jobs whose latest run ended failed. The run is part of
// the subject, so every failed run is told once, and a run that fails after
// another is a new condition.
func failedJobs(ctx context.Context, s queue.Store, r Rule, _ time.Time) ([]condition, error) {
	jobs, err := s.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, j := range jobs {
		if len(r.Jobs) > 0 && !slices.Contains(r.Jobs, j.Name) || j.LastRun == nil || j.LastRun.State != queue.RunFailed {
			continue
		}
		text := fmt.Sprintf("job %s failed: run %d ended failed", j.Name, j.LastRun.ID)
		if j.LastRun.Reason != "" {
			text += " (" + j.LastRun.Reason + ")"
		}
		out = append(out, condition{Subject: fmt.Sprintf("job %s run %d", j.Name, j.LastRun.ID), Text: text})
	}
	return out, nil
}

// longRunningJobs finds the jobs whose run under way has run longer than the
// rule's threshold or, with MedianFactor, than that many times the median
// of the job's last successful runs (at least 3 of them).
func longRunningJobs(ctx context.Context, s queue.Store, r Rule, now time.Time) ([]condition, error) {
	jobs, err := s.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, j := range jobs {
		if len(r.Jobs) > 0 && !slices.Contains(r.Jobs, j.Name) || j.LastRun == nil || j.LastRun.State != queue.RunRunning {
			continue
		}
		limit, why := time.Duration(r.Threshold), "more than "+time.Duration(r.Threshold).String()
		if r.MedianFactor > 0 {
			med, err := medianJobRun(ctx, s, j.Name, r.MedianRuns)
			if err != nil {
				return nil, err
			}
			if med > 0 {
				limit = time.Duration(r.MedianFactor * float64(med))
				why = fmt.Sprintf("more than %g × the median of its last runs (%s)", r.MedianFactor, med.Round(time.Millisecond))
			}
		}
		if ran := now.Sub(j.LastRun.StartedAt); limit > 0 && ran > limit {
			out = append(out, condition{Subject: fmt.Sprintf("job %s run %d", j.Name, j.LastRun.ID),
				Text: fmt.Sprintf("job %s: run %d has been running for %s (%s)", j.Name, j.LastRun.ID, ran.Round(time.Second), why)})
		}
	}
	return out, nil
}

// medianJobRun is the median duration of the job's last n (default 10)
// successful runs, read as one keyset page of its runs; 0 with fewer than 3.
func medianJobRun(ctx context.Context, s queue.Store, job string, n int) (time.Duration, error) {
	if n <= 0 {
		n = 10
	}
	runs, err := s.Runs(ctx, queue.RunQuery{Job: job, Limit: 4 * n})
	if err != nil {
		return 0, err
	}
	var took []time.Duration
	for _, r := range runs {
		if r.State == queue.RunSucceeded && !r.FinishedAt.IsZero() && len(took) < n {
			took = append(took, r.FinishedAt.Sub(r.StartedAt))
		}
	}
	if len(took) < 3 {
		return 0, nil
	}
	sort.Slice(took, func(a, b int) bool { return took[a] < took[b] })
	return took[len(took)/2], nil
}

// targetNodesGone is how long a node may be silent before the directory of
// targets leaves it out: the nodes' default lease.
const targetNodesGone = 30 * time.Second

// unreachableTargets finds the targets that every live node serving them has
// failed to reach for longer than the threshold, by the checks the nodes
// publish in their heartbeats (a target one node still reaches is a network
// problem of the others, not the target's).
func unreachableTargets(ctx context.Context, s queue.Store, r Rule, now time.Time) ([]condition, error) {
	targets, err := ops.ClusterTargets(ctx, s, targetNodesGone)
	if err != nil {
		return nil, err
	}
	var out []condition
	for _, t := range targets {
		if len(r.Targets) > 0 && !slices.Contains(r.Targets, t.Name) || !t.Served() {
			continue
		}
		down, since, why := true, time.Time{}, ""
		for _, n := range t.Nodes {
			st := n.Status
			if st.Checked.IsZero() || st.Reachable || now.Sub(st.Since) <= time.Duration(r.Threshold) {
				down = false
				break
			}
			if since.IsZero() || st.Since.Before(since) {
				since, why = st.Since, st.Error
			}
		}
		if !down {
			continue
		}
		text := fmt.Sprintf("target %s is unreachable from every node that serves it (%d) since %s", t.Name, len(t.Nodes), since.UTC().Format(time.RFC3339))
		if why != "" {
			text += ": " + why
		}
		out = append(out, condition{Subject: "target " + t.Name, Text: text})
	}
	return out, nil
}
