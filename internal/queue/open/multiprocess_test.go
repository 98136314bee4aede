package open_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const claimerEnv = "READPAST_TEST_CLAIMER_DSN"

// TestMultiProcessClaims runs several OS processes claiming from one database
// and checks every task was claimed exactly once across them, with group limits
// honoured across processes.
func TestMultiProcessClaims(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dsn := testenv.NewDSN(t, d)
			// The children check the limit-1 group across processes, which
			// rests on UPDLOCK of the group row.
			(&testenv.Env{Dialect: d, DSN: dsn}).SkipOnBabelfish(t, testenv.BabelfishLockHints)
			multiProcessClaims(t, dsn)
		})
	}
}

func multiProcessClaims(t *testing.T, dsn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := open.Store(ctx, dsn, queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	const total, procs = 3000, 4
	tasks := make([]queue.NewTask, total)
	for i := range tasks {
		tasks[i] = queue.NewTask{Body: "SELECT 1", Queue: "mp"}
		if i%10 == 0 {
			tasks[i].Group = "serial" // limit 1 across every process
		}
	}
	_, err = s.Enqueue(ctx, tasks)
	require.NoError(t, err)

	seen := map[int64]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestClaimerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), claimerEnv+"="+dsn)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if id, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
					mu.Lock()
					seen[id]++
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("claimer process: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, total, "every task must be claimed by some process")
	for id, n := range seen {
		require.Equal(t, 1, n, "task %d was claimed %d times", id, n)
	}
	groups, err := s.Groups(ctx)
	require.NoError(t, err)
	require.Zero(t, groups[0].Running)
}

// TestClaimerProcess is the child of TestMultiProcessClaims: it claims and
// finishes tasks until the queue is empty, printing each claimed id. While it
// holds a task of group "serial" it checks no other process holds one.
func TestClaimerProcess(t *testing.T) {
	dsn := os.Getenv(claimerEnv)
	if dsn == "" {
		t.Skip("only run as a child of TestMultiProcessClaims")
	}
	ctx := context.Background()
	s, err := open.Store(ctx, dsn, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for empty := 0; empty < 3; {
		var got []*queue.Task
		err := retryBusy(func() (err error) {
			got, err = s.Claim(ctx, queue.ClaimParams{Queue: "mp", Owner: fmt.Sprintf("pid%d", os.Getpid()), Limit: 25, LeaseDuration: time.Minute})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			// Done only when nothing is left: tasks of the limit-1 group wait for
			// each other, so an empty claim alone does not mean the queue is empty.
			left, err := s.List(ctx, queue.ListParams{Queue: "mp", State: queue.StatePending, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(left) == 0 {
				empty++
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		empty = 0
		attempts := make([]queue.Attempt, len(got))
		for i, task := range got {
			fmt.Fprintln(w, task.ID)
			if task.Group == "serial" {
				others, err := s.List(ctx, queue.ListParams{Group: "serial", State: queue.StateRunning})
				if err != nil {
					t.Fatal(err)
				}
				if len(others) != 1 {
					t.Errorf("%d tasks of limit-1 group serial running at once", len(others))
				}
			}
			attempts[i] = queue.Attempt{Lease: task.Lease(), Outcome: queue.OutcomeSucceeded, StartedAt: time.Now(), FinishedAt: time.Now()}
		}
		var res []queue.FinishResult
		err = retryBusy(func() (err error) {
			res, err = s.Finish(ctx, attempts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
}

// retryBusy retries a store call that failed, as a real claimer does: under CPU
// load SQLite can report the database busy past its busy timeout, and a child
// that gave up while holding leases would leave tasks nobody reclaims here.
func retryBusy(fn func() error) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = fn(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
