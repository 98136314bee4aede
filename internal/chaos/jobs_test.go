package chaos

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/jobs"
	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// A run follows its job's flow exactly once while nodes die between and
// during its steps (docs/JOBS.md). Three node processes of the real binary
// run the steps of many runs, one of them killed with SIGKILL and started
// again every half second. Each job goes from its first step straight to its third
// (a go-to over the second), whose action quits with success. Afterwards
// every run succeeded having executed exactly its first and third steps, in
// that order, each one task with one succeeded attempt (the others lost);
// the second step never ran; and each step's transactional effect committed
// exactly once per run: no step was skipped and none doubled.
func TestChaosKillBetweenJobSteps(t *testing.T) {
	t.Parallel()
	flags := []string{"--workers", "4", "--lease", "2s", "--grace", "1s", "--poll", "50ms"}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		runJobChaos(t, newSQLite(t), [2]time.Duration{20 * time.Millisecond, 80 * time.Millisecond}, flags)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		runJobChaos(t, newPostgres(t, testenv.NewDSN(t, testenv.Postgres)), [2]time.Duration{100 * time.Millisecond, 500 * time.Millisecond}, flags)
	})
}

const (
	chaosJobs    = 4
	chaosRunsPer = 6
)

func runJobChaos(t *testing.T, d database, sleep [2]time.Duration, flags []string) {
	d.Exec(t, "CREATE TABLE chaos_effect (tag varchar(40) NOT NULL)")
	ed := jobs.Editor{Store: d.Store}
	step := func(job, name string) jobs.StepDef {
		s := sleep[0] + rand.N(sleep[1]-sleep[0]+1)
		return jobs.StepDef{Name: name, Transactional: true, RetryAttempts: 999, RetryInterval: jobs.Duration(200 * time.Millisecond),
			Body: fmt.Sprintf("INSERT INTO chaos_effect (tag) VALUES ('%s-%s')\nGO\n%s", job, name, testenv.SleepBody(t, d.Dialect, s))}
	}
	var runs []int64
	for j := range chaosJobs {
		name := fmt.Sprintf("job%d", j)
		first, second, third := step(name, "first"), step(name, "second"), step(name, "third")
		first.OnSuccess, third.OnSuccess = "step:third", "quit_success"
		_, _, err := ed.Create(t.Context(), jobs.Definition{Name: name, Queue: "chaos-jobs", Overlap: "allow",
			Steps: []jobs.StepDef{first, second, third}}, "chaos")
		require.NoError(t, err)
		for range chaosRunsPer {
			r, err := ed.Run(t.Context(), name, "", "chaos")
			require.NoError(t, err)
			runs = append(runs, r.RunID)
		}
	}

	dir := t.TempDir()
	incarnation := 0
	start := func(slot int) *node {
		incarnation++
		name := fmt.Sprintf("n%d-%d", slot, incarnation)
		return startNode(t, dir, name, nodeArgs(d.DSN, name, flags...))
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = start(i)
	}
	began := time.Now()
	deadline := began.Add(4 * time.Minute)
	kill := time.NewTicker(500 * time.Millisecond) // often enough to land between steps however fast the machine runs them
	defer kill.Stop()
	kills := 0
	for {
		running := 0
		for _, id := range runs {
			r, err := d.Store.GetRun(t.Context(), id)
			require.NoError(t, err)
			if r.State == queue.RunRunning {
				running++
			}
		}
		if running == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d runs still running after %s; %d kills", running, time.Since(began).Round(time.Second), kills)
		select {
		case <-kill.C:
			slot := rand.N(len(nodes))
			nodes[slot].kill(t)
			nodes[slot] = start(slot)
			kills++
		case <-time.After(200 * time.Millisecond):
		}
	}
	elapsed := time.Since(began)
	for _, n := range nodes {
		n.stop(t, 30*time.Second)
	}

	lost := 0
	for _, id := range runs {
		r, err := d.Store.GetRun(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, queue.RunSucceeded, r.State, "run %d: %s", id, r.Reason)
		require.Len(t, r.Steps, 2, "run %d executed its first and third steps, once each", id)
		require.Equal(t, "first", r.Steps[0].Step)
		require.Equal(t, "third", r.Steps[1].Step)
		for _, s := range r.Steps {
			require.Equal(t, queue.StateSucceeded, s.State)
			recs, err := d.Store.TaskAttempts(t.Context(), s.TaskID)
			require.NoError(t, err)
			ok := 0
			for _, a := range recs {
				switch {
				case a.Outcome == queue.OutcomeSucceeded:
					ok++
				case a.Outcome == queue.OutcomeLost, givenBack(a):
					lost++
				default:
					t.Fatalf("run %d, step %s, task %d: attempt %d ended %s: %s", id, s.Step, s.TaskID, a.Attempt, a.Outcome, a.Error)
				}
			}
			require.Equal(t, 1, ok, "run %d, step %s: one succeeded attempt", id, s.Step)
		}
	}
	w := &workload{database: d}
	effects := w.effects(t)
	for j := range chaosJobs {
		name := fmt.Sprintf("job%d", j)
		require.Equal(t, chaosRunsPer, effects[name+"-first"], "%s: the first step committed once per run", name)
		require.Equal(t, chaosRunsPer, effects[name+"-third"], "%s: the third step committed once per run", name)
		require.Zero(t, effects[name+"-second"], "%s: the go-to skipped the second step", name)
	}
	t.Logf("%s: %d runs, %d kills in %s, %d attempts lost", d.Dialect, len(runs), kills, elapsed.Round(time.Millisecond), lost)
	require.GreaterOrEqual(t, kills, 2, "the run killed nodes while steps ran")
}
