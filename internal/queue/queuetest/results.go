package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/resultset"
)

// resultOutput is an encoded result output as an executor keeps one.
func resultOutput(value string) string {
	v := value
	o := resultset.Output{Sets: []resultset.Set{{Columns: []string{"n", "s"}, Rows: [][]*string{{&v, nil}}}}}
	return o.Encode()
}

var resultTests = map[string]func(*testing.T, Harness){
	"result_rows_is_a_queue_setting_off_by_default": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "r0"})
		q, err := b.s.UpdateQueue(b.ctx, "r1", queue.QueueUpdate{ResultRows: intp(250), Actor: "ann"})
		require.NoError(t, err)
		require.Equal(t, 250, q.ResultRows)
		_, err = b.s.UpdateQueue(b.ctx, "r1", queue.QueueUpdate{Paused: ptr(true), Actor: "ann"})
		require.NoError(t, err)
		settings, err := b.s.QueueSettings(b.ctx)
		require.NoError(t, err)
		byName := map[string]queue.Queue{}
		for _, q := range settings {
			byName[q.Name] = q
		}
		require.Zero(t, byName["r0"].ResultRows, "a queue keeps no result output unless told")
		require.Equal(t, 250, byName["r1"].ResultRows, "another setting's change leaves result_rows as it was")
		all, err := b.s.Queues(b.ctx)
		require.NoError(t, err)
		for _, q := range all {
			if q.Name == "r1" {
				require.Equal(t, 250, q.ResultRows)
			}
		}
		_, err = b.s.UpdateQueue(b.ctx, "r1", queue.QueueUpdate{ResultRows: intp(queue.MaxResultRows + 1), Actor: "ann"})
		require.True(t, queue.IsValidation(err), "more than %d rows is refused, got %v", queue.MaxResultRows, err)
		_, err = b.s.UpdateQueue(b.ctx, "r1", queue.QueueUpdate{ResultRows: intp(0), Actor: "ann"})
		require.NoError(t, err)
		q, err = b.s.UpdateQueue(b.ctx, "r1", queue.QueueUpdate{Actor: "ann"})
		require.NoError(t, err)
		require.Zero(t, q.ResultRows, "0 turns it off")
	},
	"finish_and_release_keep_an_attempts_output": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "r", MaxAttempts: 3},
			queue.NewTask{Body: "SELECT 2", Queue: "r"})
		got := b.claim(t, "r", 2)
		require.Len(t, got, 2)
		byID := map[int64]*queue.Task{got[0].ID: got[0], got[1].ID: got[1]}
		// One batch: the first attempt kept output, the second none.
		first := attempt(byID[ids[0]], queue.OutcomeFailed, "boom")
		first.Results = resultOutput("attempt 1")
		second := attempt(byID[ids[1]], queue.OutcomeSucceeded, "")
		res, err := b.s.Finish(b.ctx, []queue.Attempt{first, second})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		require.NoError(t, res[1].Err)

		out, err := b.s.TaskResults(b.ctx, ids[0])
		require.NoError(t, err)
		require.Len(t, out, 1)
		require.Equal(t, 1, out[0].Attempt, "keyed by the attempt number its log row has")
		o, err := resultset.Decode(out[0].Results)
		require.NoError(t, err)
		require.Equal(t, "attempt 1", *o.Sets[0].Rows[0][0])
		require.Nil(t, o.Sets[0].Rows[0][1], "NULL stays NULL")
		none, err := b.s.TaskResults(b.ctx, ids[1])
		require.NoError(t, err)
		require.Empty(t, none, "an attempt that kept no output stores nothing")

		// Releases keep theirs: one of an attempt a fault stopped (a
		// statement of its own on PostgreSQL), then a plain one, then the
		// finish of the third attempt.
		third := b.enqueue(t, queue.NewTask{Body: "SELECT 3", Queue: "r3"})[0]
		for n, uncounted := range []bool{true, false} {
			c := b.claim(t, "r3", 1)
			require.Len(t, c, 1)
			a := attempt(c[0], queue.OutcomeCancelled, "released at shutdown")
			a.Uncounted = uncounted
			a.Results = resultOutput("release " + string(rune('1'+n)))
			res, err := b.s.Release(b.ctx, []queue.Attempt{a})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
		}
		c := b.claim(t, "r3", 1)
		require.Len(t, c, 1)
		a := attempt(c[0], queue.OutcomeSucceeded, "")
		a.Results = resultOutput("finish")
		res, err = b.s.Finish(b.ctx, []queue.Attempt{a})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		out, err = b.s.TaskResults(b.ctx, third)
		require.NoError(t, err)
		require.Len(t, out, 3)
		recs, err := b.s.TaskAttempts(b.ctx, third)
		require.NoError(t, err)
		require.Len(t, recs, 3)
		for i, want := range []string{"release 1", "release 2", "finish"} {
			require.Equal(t, recs[i].Attempt, out[i].Attempt, "output %d is of the attempt its log row numbers", i)
			o, err := resultset.Decode(out[i].Results)
			require.NoError(t, err)
			require.Equal(t, want, *o.Sets[0].Rows[0][0])
		}
		// A stale lease writes nothing.
		stale := a
		stale.Results = resultOutput("stale")
		res, err = b.s.Finish(b.ctx, []queue.Attempt{stale})
		require.NoError(t, err)
		require.ErrorIs(t, res[0].Err, queue.ErrLeaseLost)
		out, err = b.s.TaskResults(b.ctx, third)
		require.NoError(t, err)
		require.Len(t, out, 3)
	},
	"transactional_body_keeps_its_output": func(t *testing.T, h Harness) {
		b := setup(t, h)
		body := "CREATE TABLE tx_out (n int)\nGO\nINSERT INTO tx_out VALUES (1)\nGO\nSELECT 'kept' AS word, NULL AS missing"
		ctx := resultset.WithRows(b.ctx, 10)
		p := runTx(t, b, ctx, "txr", body)
		require.NoError(t, p.err)
		require.NoError(t, p.res.BodyErr)
		require.True(t, p.res.Committed)
		out, err := b.s.TaskResults(b.ctx, p.task.ID)
		require.NoError(t, err)
		require.Len(t, out, 1, "the committed attempt's output is recorded with it")
		o, err := resultset.Decode(out[0].Results)
		require.NoError(t, err)
		require.Equal(t, []string{"word", "missing"}, o.Sets[0].Columns)
		require.Equal(t, "kept", *o.Sets[0].Rows[0][0])
		require.Nil(t, o.Sets[0].Rows[0][1])
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM tx_out"), "the body ran as written")

		// Without the context's rows nothing is kept.
		p = runTx(t, b, b.ctx, "txn", "SELECT 'not kept' AS word")
		require.NoError(t, p.err)
		require.Empty(t, p.res.Results)
		out, err = b.s.TaskResults(b.ctx, p.task.ID)
		require.NoError(t, err)
		require.Empty(t, out)
	},
	"output_goes_with_its_task": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "rp"}, queue.NewTask{Body: "SELECT 2", Queue: "rp"},
			queue.NewTask{Body: "SELECT 3", Queue: "rp"})
		got := b.claim(t, "rp", 3)
		require.Len(t, got, 3)
		var attempts []queue.Attempt
		for _, task := range got {
			a := attempt(task, queue.OutcomeSucceeded, "")
			a.Results = resultOutput("kept")
			attempts = append(attempts, a)
		}
		_, err := b.s.Finish(b.ctx, attempts)
		require.NoError(t, err)
		for _, id := range ids {
			out, err := b.s.TaskResults(b.ctx, id)
			require.NoError(t, err)
			require.Len(t, out, 1)
		}
		// Deleting a finished task deletes its output.
		require.NoError(t, b.s.DeleteTask(b.ctx, ids[0], "ann"))
		out, err := b.s.TaskResults(b.ctx, ids[0])
		require.NoError(t, err)
		require.Empty(t, out, "a deleted task's output is deleted with it")
		// Retention's purge of finished tasks takes their output.
		n, err := b.s.PurgeTasks(b.ctx, time.Now().Add(time.Hour), 1)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = b.s.PurgeTasks(b.ctx, time.Now().Add(time.Hour), 5)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		for _, id := range ids[1:] {
			out, err := b.s.TaskResults(b.ctx, id)
			require.NoError(t, err)
			require.Empty(t, out, "task %d was purged: its output goes with it", id)
		}
	},
}
