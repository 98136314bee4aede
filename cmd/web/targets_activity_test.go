package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
)

// A task on a PostgreSQL target blocked by a DBA's open transaction: the
// targets page and the task's page show what it waits on and the blocker's
// session, while it waits.
func TestTargetPagesShowTheBlocker(t *testing.T) {
	t.Parallel()
	pg := withPassword(testenv.NewDSN(t, testenv.Postgres))
	store := "sqlite://" + filepath.Join(t.TempDir(), "store.db")
	srv := targetNode(t, nil, "--dsn", store, "--poll", "50ms", "--grace", "1s", "--target", "pg1="+pg)
	c := &client{t: t, base: "http://" + srv.addr}
	var created struct {
		ID int64 `json:"id"`
	}
	// Targets are known once the node's first heartbeat publishes them.
	require.Eventually(t, func() bool {
		code, out := c.do("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE acct (n int)\nGO\nINSERT INTO acct VALUES (1)", "target": "pg1"})
		return code == http.StatusCreated && json.Unmarshal(out, &created) == nil
	}, 20*time.Second, 200*time.Millisecond)
	require.Equal(t, "succeeded", c.waitState(created.ID, "succeeded", "failed").State)

	ctx := context.Background()
	cfg, err := pgx.ParseConfig(pg)
	require.NoError(t, err)
	cfg.RuntimeParams["application_name"] = "dba-blocker"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "UPDATE acct SET n = 2")
	require.NoError(t, err)
	var blocker int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&blocker))

	c.json("POST", "/api/tasks", map[string]any{"body": "UPDATE acct SET n = 3", "target": "pg1"}, http.StatusCreated, &created)
	task := fmt.Sprintf("/tasks/%d", created.ID)
	for _, page := range []string{"/targets", task} {
		require.Eventually(t, func() bool {
			code, body := c.do("GET", page, nil)
			return code == http.StatusOK && strings.Contains(string(body), "dba-blocker") &&
				strings.Contains(string(body), "Lock:") && strings.Contains(string(body), ">"+strconv.Itoa(blocker)+"<")
		}, 30*time.Second, 300*time.Millisecond, "%s shows the wait and the blocker %d", page, blocker)
	}
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, "succeeded", c.waitState(created.ID, "succeeded", "failed").State)
	require.NotContains(t, c.seen.String()+srv.logs.String(), secretPassword)
}
