package web

import (
	"fmt"
	"net/http"
	"readpast/internal/testenv"
	"strings"
	"testing"

	"readpast/internal/web/api"

	"github.com/stretchr/testify/require"
)

// Every refusal of the API: the status, an {"error"} that says what is wrong,
// and nothing written.
func TestAPIRefusals(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true, maxRequest: 2048})
		op, viewer := testOperatorToken, testViewerToken
		pending := e.enqueue(op, `{"body":"SELECT 1","delay_seconds":600}`)
		before := e.written(t)

		cases := []struct {
			name          string
			method, path  string
			token, body   string
			contentType   string // overrides application/json
			status        int
			wantInMessage string
		}{
			{"no token", "GET", "/api/tasks", "", "", "", 401, "missing credentials"},
			{"wrong token", "GET", "/api/tasks", "not-a-valid-token-at-all", "", "", 401, "invalid credentials"},
			{"name with wrong token", "GET", "/api/tasks", "eve:not-a-valid-token-at-all", "", "", 401, "invalid credentials"},
			{"no token on metrics", "GET", "/metrics", "", "", "", 401, "missing credentials"},
			{"viewer enqueues", "POST", "/api/tasks", viewer, `{"body":"SELECT 1"}`, "", 403, "viewer role"},
			{"viewer cancels", "POST", fmt.Sprintf("/api/tasks/%d/cancel", pending.ID), viewer, "", "", 403, "needs the operator role"},
			{"viewer pauses", "PATCH", "/api/queues/default", viewer, `{"paused":true}`, "", 403, "operator"},
			{"viewer sets a group", "PUT", "/api/groups/g", viewer, `{"max_running":2}`, "", 403, "operator"},
			{"unknown field", "POST", "/api/tasks", op, `{"body":"SELECT 1","prio":3}`, "", 400, `prio`},
			{"unknown field in a batch task", "POST", "/api/tasks/batch", op, `{"tasks":[{"body":"SELECT 1","quuee":"x"}]}`, "", 400, "quuee"},
			{"unknown queue field", "PATCH", "/api/queues/default", op, `{"worker":3}`, "", 400, "worker"},
			{"wrong type", "POST", "/api/tasks", op, `{"body":"SELECT 1","priority":"high"}`, "", 400, "priority"},
			{"malformed", "POST", "/api/tasks", op, `{"body":"SELECT 1",`, "", 400, "malformed JSON"},
			{"empty body", "POST", "/api/tasks", op, "", "application/json", 400, "empty"},
			{"two objects", "POST", "/api/tasks", op, `{"body":"SELECT 1"}{"body":"SELECT 2"}`, "", 400, "after the JSON object"},
			{"not an object", "POST", "/api/tasks", op, `[1]`, "", 400, "JSON object"},
			{"blank body", "POST", "/api/tasks", op, `{"body":"   "}`, "", 400, "body"},
			{"bad priority", "POST", "/api/tasks", op, `{"body":"SELECT 1","priority":40000}`, "", 400, "priority"},
			{"bad queue name", "POST", "/api/tasks", op, `{"body":"SELECT 1","queue":"has space"}`, "", 400, "queue"},
			{"delay and available_at", "POST", "/api/tasks", op, `{"body":"SELECT 1","delay_seconds":5,"available_at":"2030-01-01T00:00:00Z"}`, "", 400, "delay_seconds"},
			{"bad available_at", "POST", "/api/tasks", op, `{"body":"SELECT 1","available_at":"tomorrow"}`, "", 400, "available_at"},
			{"negative timeout", "POST", "/api/tasks", op, `{"body":"SELECT 1","timeout_seconds":-1}`, "", 400, "timeout_seconds"},
			{"stage without chain", "POST", "/api/tasks", op, `{"body":"SELECT 1","stage":3}`, "", 400, "stage"},
			{"too many attempts", "POST", "/api/tasks", op, `{"body":"SELECT 1","max_attempts":5000}`, "", 400, "max_attempts"},
			{"request over the limit", "POST", "/api/tasks", op, fmt.Sprintf(`{"body":"%s"}`, strings.Repeat("x", 3000)), "", 413, "over the limit of 2048 bytes"},
			{"form body", "POST", "/api/tasks", op, `body=SELECT+1`, "application/x-www-form-urlencoded", 415, "JSON"},
			{"no content type", "POST", "/api/tasks", op, `{"body":"SELECT 1"}`, "-", 415, "application/json"},
			{"missing task", "GET", "/api/tasks/999999", op, "", "", 404, "there is no task 999999"},
			{"cancel missing task", "POST", "/api/tasks/999999/cancel", op, "", "", 404, "there is no task 999999"},
			{"bad id", "GET", "/api/tasks/abc", op, "", "", 400, "id"},
			{"retry a pending task", "POST", fmt.Sprintf("/api/tasks/%d/retry", pending.ID), op, "", "", 409, "only failed or cancelled"},
			{"unknown endpoint", "GET", "/api/nope", op, "", "", 404, "not found"},
			{"wrong method", "DELETE", "/api/tasks", op, "", "", 405, "not allowed"},
			{"unknown query parameter", "GET", "/api/tasks?stat=failed", op, "", "", 400, "stat"},
			{"bad state filter", "GET", "/api/tasks?state=done", op, "", "", 400, "state"},
			{"bad limit", "GET", "/api/tasks?limit=5000", op, "", "", 400, "limit"},
			{"bad cursor", "GET", "/api/tasks?cursor=-3", op, "", "", 400, "cursor"},
			{"empty queue patch", "PATCH", "/api/queues/default", op, `{}`, "", 400, "changes nothing"},
			{"negative workers", "PATCH", "/api/queues/default", op, `{"workers":-1}`, "", 400, "workers"},
			{"null workers", "PATCH", "/api/queues/default", op, `{"workers":null}`, "", 400, "workers"},
			{"bad queue name in path", "PATCH", "/api/queues/bad%20name", op, `{"paused":true}`, "", 400, "name"},
			{"zero group limit", "PUT", "/api/groups/g", op, `{"max_running":0}`, "", 400, "max_running"},
			{"missing group limit", "PUT", "/api/groups/g", op, `{}`, "", 400, "max_running"},
			{"group limit as a string", "PUT", "/api/groups/g", op, `{"max_running":"2"}`, "", 400, "max_running"},
			{"zero max running", "PATCH", "/api/queues/default", op, `{"max_running":0}`, "", 400, "max_running"},
			{"paused as a string", "PATCH", "/api/queues/default", op, `{"paused":"yes"}`, "", 400, "paused"},
			{"null paused", "PATCH", "/api/queues/default", op, `{"paused":null}`, "", 400, "paused"},
			{"duplicate queue setting", "PATCH", "/api/queues/default", op, `{"paused":true,"paused":false}`, "", 400, "more than once"},
			{"empty batch", "POST", "/api/tasks/batch", op, `{"tasks":[]}`, "", 400, "tasks"},
			{"batch task in another chain", "POST", "/api/tasks/batch", op, `{"chain":"c","tasks":[{"body":"SELECT 1","chain":"d"}]}`, "", 400, "tasks[0].chain"},
			{"a batch's later task refused", "POST", "/api/tasks/batch", op, `{"tasks":[{"body":"SELECT 1"},{"body":"SELECT 1","priority":-1}]}`, "", 400, "tasks[1].priority"},
			{"number too large", "POST", "/api/tasks", op, `{"body":"SELECT 1","priority":99999999999999999999}`, "", 400, "priority"},
			{"fractional stage", "POST", "/api/tasks", op, `{"body":"SELECT 1","chain":"c","stage":1.5}`, "", 400, "stage"},
			{"null body", "POST", "/api/tasks", op, `{"body":null}`, "", 400, "body"},
			{"a string for an object", "POST", "/api/tasks", op, `"SELECT 1"`, "", 400, "JSON object"},
			{"bad log time", "GET", "/api/logs?until=tomorrow", op, "", "", 400, "until"},
			{"bad log cursor", "GET", "/api/logs?cursor=0", op, "", "", 400, "cursor"},
			{"retry a missing task", "POST", "/api/tasks/999999/retry", op, "", "", 404, "there is no task 999999"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req := e.newRequest(c.method, c.path, c.token, c.body)
				switch c.contentType {
				case "":
				case "-":
					req.Header.Del("Content-Type")
				default:
					req.Header.Set("Content-Type", c.contentType)
				}
				r := e.send(req, nil)
				require.Equal(t, c.status, r.status, "%s %s: %s", c.method, c.path, r.body)
				if c.status >= 400 {
					require.Contains(t, r.errorMsg(t), c.wantInMessage)
					require.Equal(t, "application/json", r.header.Get("Content-Type"))
				}
				if c.status == 401 {
					require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
				}
			})
		}
		require.Equal(t, before, e.written(t), "refused requests wrote nothing")
	})
}

// Validation errors carry the field apart from the message too.
func TestAPIErrorNamesField(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		r := e.call("POST", "/api/tasks", "", `{"body":"SELECT 1","prio":3}`)
		var b api.ErrorBody
		r.json(t, &b)
		require.Equal(t, "prio", b.Field)
		require.Equal(t, `invalid prio: is not a known field (see docs/API.md)`, b.Error)
		r = e.call("POST", "/api/tasks", "", `{"body":"SELECT 1","max_attempts":0.5}`)
		r.json(t, &b)
		require.Equal(t, "max_attempts", b.Field)
		require.Contains(t, b.Error, "expected a whole number")

		// The store's body limit (4096 bytes here) is a validation error, not a 413.
		r = e.call("POST", "/api/tasks", "", fmt.Sprintf(`{"body":"%s"}`, strings.Repeat("x", 5000)))
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		r.json(t, &b)
		require.Equal(t, "body", b.Field)
		require.Contains(t, b.Error, "over the limit of 4096 bytes")
	})
}
