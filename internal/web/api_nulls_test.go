package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// Absent values are null in every API answer, never "" (docs/API.md): tasks,
// their attempts, the log and its exports, queues, groups and nodes. (A
// node's info is what the node reported, passed through as it was.)
func TestAPIAnswersHaveNullNotEmpty(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, node: true})
		ok := e.enqueue("", `{"body":"SELECT 1","queue":"nulls"}`)
		bad := e.enqueue("", `{"body":"SELECT * FROM no_such_table","queue":"nulls","max_attempts":1}`)
		e.waitState(ok.ID, queue.StateSucceeded, 20*time.Second)
		e.waitState(bad.ID, queue.StateFailed, 20*time.Second)
		_, err := e.store.Enqueue(e.ctx, []queue.NewTask{{Body: "SELECT 1", Queue: "untouched", Delay: time.Hour}}) // no actor
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, e.call("PUT", "/api/groups/g", "", `{"max_running":2}`).status)

		for _, path := range []string{"/api/tasks", fmt.Sprintf("/api/tasks/%d", ok.ID), fmt.Sprintf("/api/tasks/%d", bad.ID),
			"/api/logs", "/api/logs?format=json", "/api/logs?format=ndjson", "/api/queues", "/api/groups", "/api/nodes"} {
			r := e.call("GET", path, "", "")
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
			docs := [][]byte{r.body}
			if strings.Contains(path, "ndjson") {
				docs = nil
				sc := bufio.NewScanner(bytes.NewReader(r.body))
				for sc.Scan() {
					docs = append(docs, append([]byte(nil), sc.Bytes()...))
				}
				require.NotEmpty(t, docs)
			}
			for _, doc := range docs {
				var v any
				require.NoError(t, json.Unmarshal(doc, &v), "%s", path)
				for _, where := range emptyStrings(v, "") {
					t.Errorf(`%s: %s is "" or the zero time where an absent value is null: %s`, path, where, doc)
				}
			}
		}
	})
}

// emptyStrings lists where v holds "" or the zero time (a node's info excepted).
func emptyStrings(v any, at string) []string {
	var out []string
	switch x := v.(type) {
	case string:
		if x == "" || strings.HasPrefix(x, "0001-01-01T00:00:00") {
			out = append(out, at) // "", or the zero time standing for no time
		}
	case []any:
		for i, e := range x {
			out = append(out, emptyStrings(e, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case map[string]any:
		for k, e := range x {
			if k == "info" {
				continue
			}
			out = append(out, emptyStrings(e, at+"."+k)...)
		}
	}
	return out
}
