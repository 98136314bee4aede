package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
)

// One rule for empty strings (docs/API.md, issue 25): a string field given as
// "" is refused, naming the field and saying what leaving it out means; left
// out, or null, it takes its default. "queue": "" used to become default and
// "unique_key": "" was accepted though a key is 1 to 128 bytes.
func TestAPIRefusesEmptyStrings(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, apiOpts{dialect: testenv.SQLite})
	created := e.call("POST", "/api/schedules", "", `{"name":"s","cron":"@daily","body":"SELECT 1"}`)
	require.Equal(t, http.StatusCreated, created.status, "%s", created.body)
	before := e.written(t)
	cases := []struct {
		method, path, body, field, want string
	}{
		{"POST", "/api/tasks", `{"body":"SELECT 1","queue":""}`, "queue", "leave it out for the queue default"},
		{"POST", "/api/tasks", `{"body":"SELECT 1","unique_key":""}`, "unique_key", "leave it out for no unique key"},
		{"POST", "/api/tasks", `{"body":"SELECT 1","group":""}`, "group", "leave it out for no group"},
		{"POST", "/api/tasks", `{"body":"SELECT 1","chain":""}`, "chain", "leave it out for no chain"},
		{"POST", "/api/tasks/batch", `{"tasks":[{"body":"SELECT 1"},{"body":"SELECT 1","queue":""}]}`, "tasks[1].queue", "is empty"},
		{"POST", "/api/tasks/batch", `{"chain":"c","tasks":[{"body":"SELECT 1","chain":""}]}`, "tasks[0].chain", "leave it out"},
		{"POST", "/api/schedules", `{"name":"t","cron":"@daily","body":"SELECT 1","queue":""}`, "queue", "is empty"},
		{"POST", "/api/schedules", `{"name":"t","cron":"@daily","body":"SELECT 1","time_zone":""}`, "time_zone", "leave it out for UTC"},
		{"POST", "/api/schedules", `{"name":"t","cron":"@daily","body":"SELECT 1","group":""}`, "group", "is empty"},
		{"PATCH", "/api/schedules/s", `{"queue":""}`, "queue", "null for the queue default"},
		{"PATCH", "/api/schedules/s", `{"group":""}`, "group", "null for no group"},
	}
	for _, c := range cases {
		e.refused(t, c.method, c.path, c.body, http.StatusBadRequest, c.field, c.want)
	}
	require.Equal(t, before, e.written(t), "refused requests wrote nothing")

	// Left out or null, each takes its default.
	for _, body := range []string{`{"body":"SELECT 1"}`, `{"body":"SELECT 1","queue":null,"unique_key":null,"group":null}`} {
		r := e.call("POST", "/api/tasks", "", body)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		require.Contains(t, string(r.body), `"queue":"default"`)
	}
}
