package schedule_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The child process of TestSchedulersOnManyNodes: a node that runs a
// scheduler on the store at schedulerDSNEnv for nodeRunFor.
const schedulerDSNEnv = "READPAST_TEST_SCHEDULER_DSN"

const nodeRunFor = 6 * time.Second

// TestSchedulersOnManyNodes runs schedulers in three OS processes and three
// goroutines (each with a store of its own) on one database, over every-second
// schedules, on the database's clock: each fire time makes at most one task,
// the fire times handled follow the cron expression, and the fires the nodes
// say they made are the tasks there are. Where all of them
// were late by more than a second at once (a loaded machine), the run of the
// latest fire time stands for the ones before it, as misfire run once says,
// so the test counts runs, not seconds.
func TestSchedulersOnManyNodes(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		names := []string{"tick-a", "tick-b", "tick-c"}
		for _, n := range names {
			_, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: n, Cron: "* * * * * *", Overlap: queue.OverlapAllow,
				Task: queue.ScheduleTask{Queue: "ticks", Body: "SELECT 1"}}, "test")
			require.NoError(t, err)
		}
		ctx, cancel := context.WithTimeout(e.Ctx, nodeRunFor)
		defer cancel()
		var wg sync.WaitGroup
		var made atomic.Int64 // fires that created a task, as the nodes tell
		for range 3 {
			cmd := exec.CommandContext(e.Ctx, os.Args[0], "-test.run=^TestSchedulerProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), schedulerDSNEnv+"="+e.DSN)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			wg.Add(1)
			go func() {
				defer wg.Done()
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if n, ok := strings.CutPrefix(sc.Text(), "enqueued "); ok {
						v, _ := strconv.ParseInt(n, 10, 64)
						made.Add(v)
						t.Logf("a scheduler process made %d fires", v)
					}
				}
				if err := cmd.Wait(); err != nil {
					t.Errorf("scheduler process: %v", err)
				}
			}()
		}
		for range 3 {
			s := testenv.OpenStore(t, e.DSN, queue.Options{})
			sc := schedule.New(s, slog.New(slog.DiscardHandler), schedule.Config{Poll: 200 * time.Millisecond,
				Enqueued: func(string) { made.Add(1) }})
			wg.Add(1)
			go func() {
				defer wg.Done()
				require.NoError(t, sc.Run(ctx))
			}()
		}
		wg.Wait()

		var total int

		for _, n := range names {
			tasks, err := e.Store.List(e.Ctx, queue.ListParams{Schedule: n, Limit: 1000})
			require.NoError(t, err)
			spec, err := schedule.Parse("* * * * * *", "")
			require.NoError(t, err)
			seen := map[time.Time]int64{}
			for _, task := range tasks {
				at := task.FireAt.UTC()
				require.Zero(t, seen[at], "schedule %s: fire time %s made tasks %d and %d", n, at, seen[at], task.ID)
				seen[at] = task.ID
				require.True(t, spec.Next(at.Add(-time.Second)).Equal(at), "%s is a fire time of the schedule", at)
			}
			require.GreaterOrEqual(t, len(tasks), 2, "schedule %s ran on the nodes", n)
			t.Logf("schedule %s: %d runs, each of its own fire time", n, len(tasks))
			total += len(tasks)
		}
		require.Equal(t, int64(total), made.Load(), "the nodes made as many fires as there are tasks")
	})
}

// TestSchedulerProcess is the child of TestSchedulersOnManyNodes.
func TestSchedulerProcess(t *testing.T) {
	dsn := os.Getenv(schedulerDSNEnv)
	if dsn == "" {
		t.Skip("only run as a child of TestSchedulersOnManyNodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeRunFor)
	defer cancel()
	s := testenv.OpenStore(t, dsn, queue.Options{})
	var made int
	sc := schedule.New(s, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		schedule.Config{Poll: 200 * time.Millisecond, Enqueued: func(string) { made++ }})
	require.NoError(t, sc.Run(ctx))
	fmt.Printf("enqueued %d\n", made)
}

// TestSchedulerSleepsUntilTheNextFireAndWakes: a scheduler with a long poll
// still fires an every-second schedule each second (it sleeps until the next
// fire time, not the poll), sees a schedule created after it started when
// woken, and returns when its context ends.
func TestSchedulerSleepsUntilTheNextFireAndWakes(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		_, err := schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "first", Cron: "* * * * * *", Overlap: queue.OverlapAllow,
			Task: queue.ScheduleTask{Queue: "w", Body: "SELECT 1"}}, "test")
		require.NoError(t, err)
		var mu sync.Mutex
		woken := map[string]int{}
		sc := schedule.New(e.Store, slog.New(slog.DiscardHandler), schedule.Config{Poll: time.Hour,
			Enqueued: func(q string) { mu.Lock(); woken[q]++; mu.Unlock() }})
		ctx, cancel := context.WithCancel(e.Ctx)
		done := make(chan error, 1)
		go func() { done <- sc.Run(ctx) }()

		runs := func(name string) int {
			tasks, err := e.Store.List(e.Ctx, queue.ListParams{Schedule: name})
			require.NoError(t, err)
			return len(tasks)
		}
		require.Eventually(t, func() bool { return runs("first") >= 3 }, 30*time.Second, 50*time.Millisecond,
			"an every-second schedule runs though the poll is an hour")

		_, err = schedule.Editor{Store: e.Store}.CreateSchedule(e.Ctx, queue.ScheduleDef{Name: "later", Cron: "* * * * * *",
			Task: queue.ScheduleTask{Queue: "w2", Body: "SELECT 1"}}, "test")
		require.NoError(t, err)
		sc.Wake()
		require.Eventually(t, func() bool { return runs("later") >= 1 }, 30*time.Second, 50*time.Millisecond,
			"a woken scheduler sees a new schedule")
		cancel()
		require.NoError(t, <-done)
		mu.Lock()
		defer mu.Unlock()
		require.Positive(t, woken["w"], "each enqueue is handed to the node's workers")
	})
}
