package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// taskCount is how many tasks the store holds, whatever their state.
func (e *apiEnv) taskCount() int {
	e.t.Helper()
	n, before := 0, int64(0)
	for {
		page, err := e.store.List(e.ctx, queue.ListParams{Before: before, Limit: 1000})
		require.NoError(e.t, err)
		n += len(page)
		if len(page) < 1000 {
			return n
		}
		before = page[len(page)-1].ID
	}
}

// What the API cannot store as sent, or cannot read in one way only, is
// refused with a 400 that names the field, on every dialect, and nothing is
// written: NUL bytes (PostgreSQL cannot store them), invalid UTF-8 and lone
// surrogates (which a lenient decoder turns into U+FFFD), duplicate keys
// (which one would run?), keys in another case, and max_attempts 0 (an
// omitted field is the default; 0 is out of range).
func TestAPIRefusesWhatItCannotStoreAsSent(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		bogusBatch := make([]string, 500)
		for i := range bogusBatch {
			bogusBatch[i] = `{"body":"SELECT 1"}`
		}
		bogusBatch[499] = `{"body":"SELECT 1","bogus":true}`
		nulBatch := `{"chain":"c","tasks":[{"body":"SELECT 1"},{"body":"SELECT 2"},{"body":"SELECT 3","group":"g\u0000"}]}`

		cases := []struct {
			name, method, path, body, field, want string
		}{
			{"duplicate key", "POST", "/api/tasks", `{"body":"SELECT 1","body":"SELECT 2"}`, "body", "more than once"},
			{"duplicate key in a batch task", "POST", "/api/tasks/batch", `{"tasks":[{"body":"SELECT 1"},{"body":"SELECT 1","queue":"a","queue":"b"}]}`, "tasks[1].queue", "more than once"},
			{"key in capitals", "POST", "/api/tasks", `{"BODY":"SELECT 1"}`, "BODY", "not a known field"},
			{"key in another case", "POST", "/api/tasks", `{"body":"SELECT 1","Queue":"etl"}`, "Queue", "not a known field"},
			{"lone surrogate", "POST", "/api/tasks", `{"body":"SELECT '\ud800'"}`, "body", "surrogate"},
			{"invalid UTF-8", "POST", "/api/tasks", "{\"body\":\"SELECT '\xff'\"}", "body", "UTF-8"},
			{"NUL in the body", "POST", "/api/tasks", `{"body":"SELECT 1\u0000"}`, "body", "NUL"},
			{"NUL in the group", "POST", "/api/tasks", `{"body":"SELECT 1","group":"g\u0000"}`, "group", "NUL"},
			{"NUL in the chain", "POST", "/api/tasks", `{"body":"SELECT 1","chain":"\u0000"}`, "chain", "NUL"},
			{"NUL in the queue", "POST", "/api/tasks", `{"body":"SELECT 1","queue":"q\u0000"}`, "queue", "queue name"},
			{"NUL in a batch's chain", "POST", "/api/tasks/batch", `{"chain":"c\u0000","tasks":[{"body":"SELECT 1"}]}`, "chain", "NUL"},
			{"NUL in a batch task", "POST", "/api/tasks/batch", nulBatch, "tasks[2].group", "NUL"},
			{"max_attempts 0", "POST", "/api/tasks", `{"body":"SELECT 1","max_attempts":0}`, "max_attempts", "use 1 to 1000"},
			{"a timeout that would round to none", "POST", "/api/tasks", `{"body":"SELECT 1","timeout_seconds":0.0004}`, "timeout_seconds", "at least 1ms"},
			{"unknown field in the 500th task", "POST", "/api/tasks/batch", `{"tasks":[` + strings.Join(bogusBatch, ",") + `]}`, "tasks[499].bogus", "not a known field"},
			{"NUL in a group's name", "PUT", "/api/groups/g%00", `{"max_running":2}`, "group", "NUL"},
			{"NUL in a queue's name", "PATCH", "/api/queues/q%00", `{"paused":true}`, "name", "queue name"},
			{"NUL in the group filter", "GET", "/api/tasks?group=g%00", "", "group", "NUL"},
			{"NUL in the chain filter", "GET", "/api/tasks?chain=%00", "", "chain", "NUL"},
			{"invalid UTF-8 in the chain filter", "GET", "/api/tasks?chain=%FF", "", "chain", "UTF-8"},
			{"NUL in the queue filter", "GET", "/api/tasks?queue=%00", "", "queue", "queue name"},
			{"NUL in the log's queue filter", "GET", "/api/logs?queue=%00", "", "queue", "queue name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { e.refused(t, c.method, c.path, c.body, http.StatusBadRequest, c.field, c.want) })
		}
		require.Zero(t, e.taskCount(), "a refused request writes nothing")
		gs, err := e.store.Groups(e.ctx)
		require.NoError(t, err)
		require.Empty(t, gs)

		// What is accepted is stored as sent: an omitted max_attempts is the
		// default, and text survives byte for byte.
		body := "SELECT '😀 \u00e9\t\\'' -- tab, quote, emoji\r\nGO\r\n"
		sent := fmt.Sprintf(`{"body":%q,"group":"é g","chain":"c\t1"}`, body)
		sent = strings.Replace(sent, `😀`, `\ud83d\ude00`, 1) // an escaped surrogate pair is one character
		created := e.enqueue("", sent)
		stored, err := e.store.Get(e.ctx, created.ID)
		require.NoError(t, err)
		if keepsEscapesAsSent(t, d) {
			require.Equal(t, body, stored.Body)
			require.Equal(t, "é g", stored.Group)
			require.Equal(t, "c\t1", stored.Chain)
		}
		require.Equal(t, queue.DefaultMaxAttempts, stored.MaxAttempts)
	})
}

// written is what a request could have written: the newest task, every
// queue's settings and counts, every group, every schedule. Equal before and
// after, nothing was written.
func (e *apiEnv) written(t testing.TB) string {
	t.Helper()
	newest, err := e.store.List(e.ctx, queue.ListParams{Limit: 1})
	require.NoError(t, err)
	qs, err := e.store.Queues(e.ctx)
	require.NoError(t, err)
	gs, err := e.store.Groups(e.ctx)
	require.NoError(t, err)
	ss, err := e.store.Schedules(e.ctx)
	require.NoError(t, err)
	var b strings.Builder
	for _, task := range newest {
		fmt.Fprintf(&b, "newest task %d\n", task.ID)
	}
	for _, q := range qs {
		fmt.Fprintf(&b, "queue %q %v %v %v %s %v\n", q.Name, ptr(q.Workers), ptr(q.MaxRunning), q.Paused, q.UpdatedAt, q.Counts)
	}
	for _, g := range gs {
		fmt.Fprintf(&b, "group %q %d %s\n", g.Name, g.MaxRunning, g.UpdatedAt)
	}
	for _, s := range ss {
		fmt.Fprintf(&b, "schedule %q version %d next %s\n", s.Name, s.Version, s.NextFireAt)
	}
	return b.String()
}

func ptr(p *int) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
