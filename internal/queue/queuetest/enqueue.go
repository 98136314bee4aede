package queuetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

var enqueueTests = map[string]func(*testing.T, Harness){
	"bodies_keep_every_byte": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.SkipOnBabelfish(t, testenv.BabelfishJSONEscapes)
		bodies := []string{
			"SELECT 'x'\nGO\nSELECT 2",
			"UPDATE t SET note = N'C:\\dir\\\r\n' WHERE id = 12345\r\n",
			"SELECT \"it's\", [a]]b], 'tab\there', N'é — 漢字 — 🙂'\n\n",
			"  -- leading blanks and a trailing line break stay\n",
		}
		for _, body := range bodies {
			id := b.enqueue(t, queue.NewTask{Body: body})[0]
			require.Equal(t, body, b.get(t, id).Body, "the body as sent")
		}
	},
	"every_field_round_trips": func(t *testing.T, h Harness) {
		b := setup(t, h)
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		in := queue.NewTask{Queue: "etl", Body: "SELECT 'x'; SELECT 2", Priority: intp(0), AvailableAt: at,
			Group: "g1", Chain: "c1", Stage: 7, MaxAttempts: 5, Timeout: 1500 * time.Millisecond,
			Transactional: true, ContinueOnFailure: true, CreatedBy: "alice"}
		id := b.enqueue(t, in)[0]
		got := b.get(t, id)
		require.Equal(t, id, got.ID)
		require.Equal(t, "etl", got.Queue)
		require.Equal(t, in.Body, got.Body)
		require.Equal(t, 0, got.Priority)
		require.WithinDuration(t, at, got.AvailableAt, time.Millisecond)
		require.Equal(t, "g1", got.Group)
		require.Equal(t, "c1", got.Chain)
		require.Equal(t, 7, got.Stage)
		require.Equal(t, 5, got.MaxAttempts)
		require.Equal(t, 1500*time.Millisecond, got.Timeout)
		require.True(t, got.Transactional)
		require.True(t, got.ContinueOnFailure)
		require.Equal(t, "alice", got.CreatedBy)
		require.Equal(t, queue.StatePending, got.State)
		require.Zero(t, got.Attempts)
		require.False(t, got.CreatedAt.IsZero(), "created_at must be set")
		require.True(t, got.StartedAt.IsZero() && got.FinishedAt.IsZero())
	},
	"defaults": func(t *testing.T, h Harness) {
		b := setup(t, h)
		got := b.get(t, b.enqueue(t, queue.NewTask{Body: "SELECT 1"})[0])
		require.Equal(t, queue.DefaultQueue, got.Queue)
		require.Equal(t, queue.DefaultPriority, got.Priority)
		require.Equal(t, queue.DefaultMaxAttempts, got.MaxAttempts)
		require.Zero(t, got.Timeout)
		require.Empty(t, got.Group)
		require.Empty(t, got.Chain)
		require.WithinDuration(t, time.Now(), got.AvailableAt, time.Minute)
	},
	"delay_sets_available_at": func(t *testing.T, h Harness) {
		b := setup(t, h)
		got := b.get(t, b.enqueue(t, queue.NewTask{Body: "SELECT 1", Delay: time.Hour})[0])
		require.WithinDuration(t, time.Now().Add(time.Hour), got.AvailableAt, time.Minute)
	},
	"batch_returns_ids_in_order": func(t *testing.T, h Harness) {
		b := setup(t, h)
		tasks := make([]queue.NewTask, 300)
		for i := range tasks {
			tasks[i] = queue.NewTask{Body: "SELECT 1", Priority: intp(i % 7)}
		}
		got := b.enqueue(t, tasks...)
		for i := 1; i < len(got); i++ {
			require.Less(t, got[i-1], got[i], "ids must ascend in the order given")
		}
		for i, id := range []int64{got[0], got[150], got[299]} {
			require.Equal(t, []int{0, 150, 299}[i]%7, b.get(t, id).Priority, "task %d keeps its own fields", id)
		}
	},
	"invalid_input_is_rejected_and_nothing_written": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ok := queue.NewTask{Body: "SELECT 1"}
		cases := []struct {
			field string
			task  queue.NewTask
		}{
			{"body", queue.NewTask{Body: "  \n "}},
			{"body", queue.NewTask{Body: strings.Repeat("x", queue.DefaultMaxBodyBytes+1)}},
			{"queue", queue.NewTask{Body: "SELECT 1", Queue: "bad name!"}},
			{"queue", queue.NewTask{Body: "SELECT 1", Queue: strings.Repeat("q", 65)}},
			{"priority", queue.NewTask{Body: "SELECT 1", Priority: intp(-1)}},
			{"priority", queue.NewTask{Body: "SELECT 1", Priority: intp(40000)}},
			{"stage", queue.NewTask{Body: "SELECT 1", Chain: "c", Stage: -1}},
			{"stage", queue.NewTask{Body: "SELECT 1", Stage: 3}},
			{"max_attempts", queue.NewTask{Body: "SELECT 1", MaxAttempts: -2}},
			{"timeout", queue.NewTask{Body: "SELECT 1", Timeout: -time.Second}},
			{"available_at", queue.NewTask{Body: "SELECT 1", Delay: time.Second, AvailableAt: time.Now()}},
			{"group", queue.NewTask{Body: "SELECT 1", Group: strings.Repeat("g", 129)}},
			{"body", queue.NewTask{Body: "SELECT 1\nGO abc\nSELECT 2"}}, // sqlcmd refuses the GO line
		}
		for _, c := range cases {
			_, err := b.s.Enqueue(b.ctx, []queue.NewTask{ok, c.task})
			var ve *queue.ValidationError
			require.ErrorAs(t, err, &ve, "a bad %s must be a validation error", c.field)
			require.Equal(t, "tasks[1]."+c.field, ve.Field, "the error must name the field: %v", err)
		}
		got, err := b.s.List(b.ctx, queue.ListParams{})
		require.NoError(t, err)
		require.Empty(t, got, "a rejected batch must write nothing")
		_, err = b.s.Enqueue(b.ctx, nil)
		require.True(t, queue.IsValidation(err), "an empty batch is a validation error, got %v", err)
	},
}
