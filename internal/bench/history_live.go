package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/workers"
)

// liveSet is what the history part's store holds besides its history.
type liveSet struct {
	pending, done  int64 // a pending task's id, and a task finished through the store
	finished       int64 // how many finished tasks of the set
	node, nodeInfo string
	run            int64 // the latest run of the live set's job
}

// The live set, per queue: tasks run through Claim and Finish, one finishing
// in each minute of the last hour and one in each hour of the last week, so
// that every bucket of every range of the chart has a bar; then tasks pending
// and delayed.
const (
	liveFinished = 60 + 7*24
	livePending  = 25
	liveDelayed  = 5
)

// seedLiveSet makes the live set once per database (liveFinished, per queue:
// in each bucket one of the three queues' attempts failed, the others
// succeeded, so that every list the requests read has a full page without
// history); the first queue keeps one task running; the quiet queue has
// pending tasks only, of historyGroup, and as many runs of historySchedule.
// The queues are paused (no node of another part runs them) and a node is
// registered.
func seedLiveSet(ctx context.Context, s queue.Store) (liveSet, error) {
	l := liveSet{node: "bench-web-node", finished: int64(liveFinished * len(historyQueues))}
	qs, err := s.QueueSettings(ctx)
	if err != nil {
		return l, err
	}
	if !slices.Contains(namesOf(qs), historyQueues[0]) {
		for i, q := range historyQueues {
			if err := seedLiveQueue(ctx, s, q, i); err != nil {
				return l, fmt.Errorf("queue %s: %w", q, err)
			}
		}
		quiet := make([]queue.NewTask, livePending)
		for i := range quiet {
			quiet[i] = queue.NewTask{Queue: quietQueue, Body: fmt.Sprintf("SELECT %d -- quiet", i), Group: historyGroup}
		}
		if _, err := s.Enqueue(ctx, quiet); err != nil {
			return l, err
		}
		if err := seedScheduleRuns(ctx, s); err != nil {
			return l, err
		}
		if err := seedJobRuns(ctx, s); err != nil {
			return l, err
		}
		if _, err := s.UpdateQueue(ctx, quietQueue, queue.QueueUpdate{Paused: ptr(true), Actor: "bench"}); err != nil {
			return l, err
		}
		if err := s.RegisterNode(ctx, queue.Node{ID: l.node, Hostname: "bench", PID: 1, Version: "bench"}); err != nil {
			return l, err
		}
	}
	var first [3]*queue.Task // pending, succeeded, running
	for i, st := range []queue.State{queue.StatePending, queue.StateSucceeded, queue.StateRunning} {
		got, err := s.List(ctx, queue.ListParams{Queue: historyQueues[0], State: st, Limit: 1})
		if err != nil {
			return l, err
		}
		if len(got) == 0 {
			return l, fmt.Errorf("the live set of %s has no %s task: use a scratch database", historyQueues[0], st)
		}
		first[i] = got[0]
	}
	l.pending, l.done, l.nodeInfo = first[0].ID, first[1].ID, nodeInfoJSON(first[2])
	l.run, err = jobRun(ctx, s)
	return l, err
}

func seedLiveQueue(ctx context.Context, s queue.Store, q string, nth int) error {
	n := liveFinished
	if nth == 0 {
		n++ // the task kept running
	}
	run := make([]queue.NewTask, n)
	for i := range run {
		run[i] = queue.NewTask{Queue: q, Body: fmt.Sprintf("SELECT %d -- live", i), MaxAttempts: 1}
	}
	if _, err := s.Enqueue(ctx, run); err != nil {
		return err
	}
	claimed, err := s.Claim(ctx, queue.ClaimParams{Queue: q, Owner: "bench-web-node/w1", Limit: len(run), LeaseDuration: 24 * time.Hour})
	if err != nil {
		return err
	}
	if len(claimed) != len(run) {
		return fmt.Errorf("claimed %d tasks, wanted %d: use a scratch database", len(claimed), len(run))
	}
	now := time.Now()
	var ends []queue.Attempt
	for i, t := range claimed[:liveFinished] {
		ago := time.Duration(i) * time.Minute
		if i >= 60 {
			ago = time.Duration(i-60) * time.Hour
		}
		a := queue.Attempt{Lease: t.Lease(), Outcome: queue.OutcomeSucceeded, Node: "bench-web-node", Worker: "w1",
			StartedAt: now.Add(-ago - time.Second), FinishedAt: now.Add(-ago)}
		if (i+nth)%3 == 0 {
			a.Outcome, a.Error = queue.OutcomeFailed, "bench: failed on purpose"
		}
		ends = append(ends, a)
	}
	if _, err := s.Finish(ctx, ends); err != nil {
		return err
	}
	rest := make([]queue.NewTask, 0, livePending+liveDelayed)
	for i := 0; i < livePending+liveDelayed; i++ {
		t := queue.NewTask{Queue: q, Body: fmt.Sprintf("SELECT %d -- waiting", i)}
		if i >= livePending {
			t.Delay = time.Hour
		}
		rest = append(rest, t)
	}
	if _, err := s.Enqueue(ctx, rest); err != nil {
		return err
	}
	_, err = s.UpdateQueue(ctx, q, queue.QueueUpdate{Paused: ptr(true), Actor: "bench"})
	return err
}

// seedScheduleRuns gives historySchedule, paused, livePending pending runs
// in the quiet queue.
func seedScheduleRuns(ctx context.Context, s queue.Store) error {
	_, err := schedule.Editor{Store: s}.CreateSchedule(ctx, queue.ScheduleDef{Name: historySchedule, Cron: "0 1 * * *", Paused: true,
		Overlap: queue.OverlapAllow, Task: queue.ScheduleTask{Queue: quietQueue, Body: "SELECT 1 -- scheduled"}}, "bench")
	if err != nil {
		return fmt.Errorf("schedule %s: %w", historySchedule, err)
	}
	for range livePending {
		if _, err := s.RunSchedule(ctx, historySchedule, "bench", nil); err != nil {
			return fmt.Errorf("schedule %s: %w", historySchedule, err)
		}
	}
	return nil
}

func namesOf(qs []queue.Queue) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

// nodeInfoJSON is the live set's node as its heartbeat describes it: one pool
// per queue, the running task on its first worker.
func nodeInfoJSON(running *queue.Task) string {
	info := workers.NodeInfo{}
	for _, q := range historyQueues {
		p := workers.PoolInfo{Queue: q, Size: 4, Paused: true}
		if running.Queue == q {
			p.Running = 1
			p.Busy = []workers.WorkerInfo{{Worker: q + "-w1", Queue: q, TaskID: running.ID, SessionID: "57", StartedAt: running.StartedAt}}
		}
		info.Pools = append(info.Pools, p)
	}
	b, _ := json.Marshal(info) // plain structs: cannot fail
	return string(b)
}
