package bench

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/jobs"
	"readpast/internal/queue"
)

// The jobs pages in the history part (docs/JOBS.md): a job of the live set
// with liveRuns runs, each of two steps (one failed into its failure
// branch), run through the store's own claim and finish. Their pages must
// stay flat while the history of finished tasks grows.

const (
	historyJob      = historyQueuePrefix + "job"
	historyJobQueue = historyQueuePrefix + "jobs"
	liveRuns        = 25
)

// seedJobRuns creates the job and runs it liveRuns times, then pauses its
// queue (no node of another part runs it).
func seedJobRuns(ctx context.Context, s queue.Store) error {
	ed := jobs.Editor{Store: s}
	_, _, err := ed.Create(ctx, jobs.Definition{Name: historyJob, Queue: historyJobQueue, Overlap: "allow", Category: "bench",
		Steps: []jobs.StepDef{
			{Name: "check", Body: "SELECT 1 -- check", OnFailure: "step:notify"},
			{Name: "rebuild", Body: "SELECT 2 -- rebuild", OnSuccess: "quit_success"},
			{Name: "notify", Body: "SELECT 3 -- notify", OnSuccess: "quit_failure"},
		}}, "bench")
	if err != nil {
		return fmt.Errorf("job %s: %w", historyJob, err)
	}
	for i := range liveRuns {
		if _, err := ed.Run(ctx, historyJob, "", "bench"); err != nil {
			return fmt.Errorf("job %s: %w", historyJob, err)
		}
		for step := 0; step < 2; step++ {
			got, err := s.Claim(ctx, queue.ClaimParams{Queue: historyJobQueue, Owner: "bench-web-node/w1", Limit: 1, LeaseDuration: time.Hour})
			if err != nil {
				return err
			}
			if len(got) != 1 {
				return fmt.Errorf("job %s: run %d has no step ready", historyJob, i+1)
			}
			o := queue.OutcomeSucceeded
			if i%5 == 0 && step == 0 {
				o = queue.OutcomeFailed // every fifth run takes the failure branch
			}
			now := time.Now()
			if _, err := s.Finish(ctx, []queue.Attempt{{Lease: got[0].Lease(), Outcome: o, Node: "bench-web-node", Worker: "w1",
				StartedAt: now.Add(-time.Duration(10+i) * time.Millisecond), FinishedAt: now}}); err != nil {
				return err
			}
		}
	}
	paused := true
	_, err = s.UpdateQueue(ctx, historyJobQueue, queue.QueueUpdate{Paused: &paused, Actor: "bench"})
	return err
}

// jobRequests are the jobs pages and API reads of the live set's job.
func jobRequests(base string, run int64) []historyRequest {
	page := func(path string) historyRequest { return historyRequest{"page", path, base + path} }
	api := func(path string) historyRequest { return historyRequest{"api", path, base + path} }
	return []historyRequest{
		page("/jobs"),
		page("/jobs/" + historyJob),
		api("/api/jobs"),
		api("/api/jobs/" + historyJob + "/runs"),
		api(fmt.Sprintf("/api/runs/%d", run)),
	}
}

// jobRun is the id of the live set's job's latest run.
func jobRun(ctx context.Context, s queue.Store) (int64, error) {
	j, err := s.GetJob(ctx, historyJob)
	if err != nil {
		return 0, err
	}
	if j.LastRun == nil {
		return 0, fmt.Errorf("job %s has no run: use a scratch database", historyJob)
	}
	return j.LastRun.ID, nil
}
