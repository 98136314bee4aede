package bench

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// BacklogResult is the cost of one claim (batch of 1) of the ready tasks of a
// queue behind a backlog of tasks that cannot run now, next to the same
// claim with no backlog (SPEC §9: "a claim costs the same behind 1M blocked
// or delayed tasks").
type BacklogResult struct {
	Backlog   string  `json:"backlog"` // none, full group, delayed, both, another target
	Blocked   int     `json:"blocked"` // tasks that cannot run now, ahead in claim order
	Ready     int     `json:"ready"`   // tasks that can, behind them
	P50       float64 `json:"claim_p50_ms"`
	P99       float64 `json:"claim_p99_ms"`
	P50VsNone float64 `json:"p50_vs_none"` // P50 / the no-backlog P50; the goal is at most 1.5
}

// backlogReady is how many runnable tasks each backlog queue keeps.
const backlogReady = 1000

// backlogs are the queues of the backlog part: each with backlogReady tasks
// that can run, behind (in claim order) c.Backlog tasks of one full mutex
// group at a more urgent priority, c.Backlog tasks delayed an hour at the most
// urgent priority, both, nothing, or c.Backlog ready tasks at a more urgent
// priority of a target the claiming node does not serve (docs/TARGETS.md,
// "Flat behind another target's backlog"; the claims name the targets they
// take, as a node's do).
var backlogs = []struct {
	name                        string
	queue                       string
	group, delayed, otherTarget bool
}{
	{"none", "bench-backlog-none", false, false, false},
	{"full group", "bench-backlog-group", true, false, false},
	{"delayed", "bench-backlog-delayed", false, true, false},
	{"both", "bench-backlog-both", true, true, false},
	{"another target", "bench-backlog-target", false, false, true},
}

// backlogElsewhere is the target of the other target's backlog, which the
// claims of that queue do not name.
const backlogElsewhere = "bench-elsewhere"

// backlog builds (or finds, from an earlier run) each backlog queue and
// measures claims on it. Between runs the queues stay paused, like the
// depth part's, so no node of another part drains them.
func backlog(ctx context.Context, c Config) ([]BacklogResult, error) {
	var out []BacklogResult
	for _, b := range backlogs {
		if err := pauseQueue(ctx, c.Store, b.queue, false); err != nil {
			return out, err
		}
		r, err := measureBacklog(ctx, c, b.name, b.queue, b.group, b.delayed, b.otherTarget)
		if perr := pauseQueue(context.WithoutCancel(ctx), c.Store, b.queue, true); err == nil {
			err = perr
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", b.name, err)
		}
		if len(out) > 0 && out[0].P50 > 0 {
			r.P50VsNone = r.P50 / out[0].P50
		}
		out = append(out, r)
	}
	return out, nil
}

func measureBacklog(ctx context.Context, c Config, name, q string, group, delayed, otherTarget bool) (BacklogResult, error) {
	r := BacklogResult{Backlog: name, Ready: backlogReady}
	_, pending, err := queueCounts(ctx, c.Store, q)
	if err != nil {
		return r, err
	}
	want := backlogReady
	if group {
		want += c.Backlog
	}
	if delayed {
		want += c.Backlog
	}
	if otherTarget {
		want += c.Backlog
	}
	if int(pending) < want { // built by an earlier run otherwise
		fmt.Fprintf(c.Progress, "backlog %s: enqueueing %d tasks\n", name, want)
		if group {
			if _, err := enqueueBulk(ctx, c.Store, c.Backlog+1, queue.NewTask{Queue: q, Body: noop, Priority: ptr(1), Group: q + "-full"}); err != nil {
				return r, err
			}
			// One task of the group runs for the whole benchmark: the group
			// is full, and the rest of its backlog cannot run.
			if got, err := c.Store.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "bench/full", Limit: 1, LeaseDuration: 24 * time.Hour}); err != nil || len(got) != 1 {
				return r, fmt.Errorf("filling the group: %d tasks (%v)", len(got), err)
			}
		}
		if delayed {
			if _, err := enqueueBulk(ctx, c.Store, c.Backlog, queue.NewTask{Queue: q, Body: noop, Priority: ptr(0), Delay: 24 * time.Hour}); err != nil {
				return r, err
			}
		}
		if otherTarget {
			if _, err := enqueueBulk(ctx, c.Store, c.Backlog, queue.NewTask{Queue: q, Body: noop, Priority: ptr(1), Target: backlogElsewhere}); err != nil {
				return r, err
			}
		}
		if _, err := enqueueBulk(ctx, c.Store, backlogReady, queue.NewTask{Queue: q, Body: noop, Priority: ptr(5)}); err != nil {
			return r, err
		}
		if err := settle(ctx, c); err != nil {
			return r, err
		}
	}
	// What the queue holds, counted, not what was asked for: a backlog
	// found from an earlier run is measured as it is.
	if _, pending, err = queueCounts(ctx, c.Store, q); err != nil {
		return r, err
	}
	r.Blocked = int(pending) - backlogReady
	if group {
		r.Blocked-- // the task holding the group's slot is running, not blocked
	}
	var targets []string // any target's tasks
	if otherTarget {
		targets = []string{""} // a node that serves the tasks that name no target
	}
	took, err := claimAndReleaseOf(ctx, c.Store, q, targets, depthClaims, func(t *queue.Task) error {
		if t.Group != "" || t.Priority != 5 || t.Target != "" {
			return fmt.Errorf("the claim took a task of priority %d in group %q, not a ready one", t.Priority, t.Group)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	r.P50, r.P99 = percentile(took, 50), percentile(took, 99)
	return r, nil
}
