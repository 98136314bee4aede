package web

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// leak matches what a DBA should never read in an error: a Go package or
// dialect prefix, a doubled word, a float in exponent form.
var leak = regexp.MustCompile(`\b(queue|postgres|sqlite|sqlserver|jsontext|json|echo|ops): |\bnot not\b|\de[+-]\d`)

// Every refusal and failure a user sees reads as a sentence: what is wrong and
// what to do, with no package prefixes ("task 99999: queue: not found"),
// doubled words ("not not JSON") or exponents ("is 3.456e+06").
func TestErrorsReadAsSentences(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		a := newAPIEnv(t, apiOpts{dialect: d})
		ui := newUIEnv(t, uiOpts{dialect: d})
		done := a.enqueue("", `{"body":"SELECT 1","delay_seconds":3600}`)
		_, err := a.store.Cancel(a.ctx, done.ID, "test")
		require.NoError(t, err)
		pending := a.enqueue("", `{"body":"SELECT 1","delay_seconds":3600}`)

		cases := []struct {
			method, path, body string
			status             int
			want               string
		}{
			{"GET", "/api/tasks/99999", "", 404, "there is no task 99999"},
			{"POST", "/api/tasks/99999/cancel", "", 404, "there is no task 99999"},
			{"POST", "/api/tasks/99999/retry", "", 404, "there is no task 99999"},
			{"POST", fmt.Sprintf("/api/tasks/%d/cancel", done.ID), "", 409, fmt.Sprintf("task %d", done.ID)},
			{"POST", fmt.Sprintf("/api/tasks/%d/retry", pending.ID), "", 409, fmt.Sprintf("task %d", pending.ID)},
			{"GET", "/api/schedules/nope", "", 404, "there is no schedule nope"},
			{"DELETE", "/api/schedules/nope", "", 404, "there is no schedule nope"},
			{"PATCH", "/api/schedules/nope", `{"paused":true}`, 404, "there is no schedule nope"},
			{"POST", "/api/tasks", `{"body":"SELECT 1","delay_seconds":1e12}`, 400, "is 1000000000000"},
			{"POST", "/api/tasks", `{"body":"SELECT 1","timeout_seconds":3456000}`, 400, "is 3456000 seconds"},
			{"POST", "/api/tasks", `{"body":"SELECT 1","priority":1e400}`, 400, ""},
			{"POST", "/api/tasks", "\xff", 400, ""},
			{"POST", "/api/tasks", `{"body":"SELECT 1","priority":x}`, 400, ""},
			{"POST", "/api/tasks", `nul`, 400, ""},
			{"POST", "/api/tasks", `}`, 400, ""},
		}
		for _, c := range cases {
			r := a.call(c.method, c.path, "", c.body)
			require.Equal(t, c.status, r.status, "%s %s %s: %s", c.method, c.path, c.body, r.body)
			msg := r.errorMsg(t)
			require.NotRegexp(t, leak, msg, "%s %s %s", c.method, c.path, c.body)
			require.Contains(t, msg, c.want, "%s %s %s", c.method, c.path, c.body)
		}

		p := ui.get("/tasks/99999")
		require.Equal(t, http.StatusNotFound, p.status)
		require.Contains(t, p.body, "there is no task 99999")
		require.NotRegexp(t, leak, p.body)
		s := ui.get("/schedules/nope/edit")
		require.Equal(t, http.StatusNotFound, s.status)
		require.Contains(t, s.body, "there is no schedule nope")
		_ = time.Second
		_ = queue.StatePending
	})
}
