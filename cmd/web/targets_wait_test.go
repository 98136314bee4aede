package main

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two nodes on one store, only one of them with target lite1: while that
// node is stopped, a task for lite1 is accepted (a node has it configured)
// and waits, saying no node serves it, and the other node does not claim
// it; once a node that serves lite1 runs again, the task runs there.
func TestATaskWaitsForANodeThatServesItsTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "store.db")
	lite := filepath.Join(dir, "lite1.db")
	args := []string{"--dsn", store, "--poll", "50ms", "--grace", "1s", "--lease", "2s"}
	serving := targetNode(t, nil, append(args, "--node-id", "serving", "--target", "lite1="+lite)...)
	other := targetNode(t, nil, append(args, "--node-id", "other")...)
	c := &client{t: t, base: "http://" + other.addr}
	require.Eventually(t, func() bool {
		_, out := c.do("GET", "/api/targets", nil)
		return strings.Contains(string(out), `"name":"lite1"`)
	}, 20*time.Second, 100*time.Millisecond, "the serving node publishes lite1")
	require.Equal(t, 0, serving.stop())

	var created struct {
		ID int64 `json:"id"`
	}
	c.json("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE waited (n int)", "target": "lite1"}, http.StatusCreated, &created)
	task := c.waitState(created.ID, "pending")
	require.NotNil(t, task.Why)
	require.Contains(t, *task.Why, "no node serves target lite1")
	_, page := c.do("GET", "/tasks/"+itoa64(created.ID), nil)
	require.Contains(t, string(page), "no node serves target lite1")
	time.Sleep(time.Second) // twenty of the other node's polls
	require.Equal(t, "pending", c.waitState(created.ID, "pending").State, "the other node does not claim it")

	targetNode(t, nil, append(args, "--node-id", "serving-again", "--target", "lite1="+lite)...)
	require.Equal(t, "succeeded", c.waitState(created.ID, "succeeded", "failed").State)
}
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
