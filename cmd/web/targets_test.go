package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
)

// busyBody keeps a session busy for a while on SQLite and PostgreSQL alike
// (a recursive count), so a fan-out's runs would overlap without a limit.
const busyBody = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 200000) SELECT count(*) FROM c"

// secretPassword is in every target DSN of these tests: no output of the
// node may hold it (docs/TARGETS.md, "Secrets").
const secretPassword = "Zq9-tgt-Secr3t-pw"

// withPassword puts secretPassword into a testpg DSN (its unix socket
// trusts the login, so the server ignores it: only leaks can show it).
func withPassword(dsn string) string {
	return strings.Replace(dsn, "postgres://postgres@", "postgres://postgres:"+secretPassword+"@", 1)
}

// targetNode runs `readpast serve` with env and args, like startServe.
func targetNode(t *testing.T, env map[string]string, args ...string) served {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--listen", addr}, args...), envOf(env), logs, logs)
	}()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop; logs:\n%s", logs.String())
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "url=http://"+addr) || strings.Contains(logs.String(), "serve failed")
	},
		30*time.Second, 20*time.Millisecond, "logs:\n%s", logs.String())
	require.Contains(t, logs.String(), "url=http://"+addr, "logs:\n%s", logs.String())
	return served{addr: addr, logs: logs, stop: stop}
}

// client records every answer it reads, for the grep at the end.
type client struct {
	t    *testing.T
	base string
	seen bytes.Buffer
}

func (c *client) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	fmt.Fprintf(&c.seen, "%s %s -> %d\n%s\n", method, path, res.StatusCode, out)
	return res.StatusCode, out
}

func (c *client) json(method, path string, body any, want int, into any) {
	c.t.Helper()
	code, out := c.do(method, path, body)
	require.Equal(c.t, want, code, "%s %s: %s", method, path, out)
	if into != nil {
		require.NoError(c.t, json.Unmarshal(out, into), "%s", out)
	}
}

type taskState struct {
	ID        int64   `json:"id"`
	State     string  `json:"state"`
	Target    *string `json:"target"`
	LastError *string `json:"last_error"`
	Why       *string `json:"why"`
}

func (c *client) waitState(id int64, states ...string) taskState {
	c.t.Helper()
	var got taskState
	require.Eventually(c.t, func() bool {
		code, out := c.do("GET", fmt.Sprintf("/api/tasks/%d", id), nil)
		if code != http.StatusOK || json.Unmarshal(out, &got) != nil {
			return false
		}
		for _, s := range states {
			if got.State == s {
				return true
			}
		}
		return false
	}, 3*time.Minute, 100*time.Millisecond, "task %d never reached %v", id, states) // the race detector slows the embedded SQLite many times over
	return got
}

// One node, its store on SQLite or PostgreSQL, with two PostgreSQL
// databases, two SQLite files and a server that is down as targets, given
// by --target, READPAST_TARGETS and a targets file: each task runs on the
// target it names, a fan-out reaches every target of a tag, a limit of two
// holds, an unknown name is refused naming it, the target that is down
// fails its task after its attempts while the others run, and no page,
// API answer, export, log line or selftest output holds the password.
func TestNamedTargetsRunTasksAndKeepTheirSecrets(t *testing.T) {
	for _, storeOn := range []string{"sqlite", "postgres"} {
		t.Run("store on "+storeOn, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pg1 := withPassword(testenv.NewDSN(t, testenv.Postgres))
			pg2 := withPassword(testenv.NewDSN(t, testenv.Postgres))
			lite1, lite2 := filepath.Join(dir, "lite1.db"), filepath.Join(dir, "lite2.db")
			store := "sqlite://" + filepath.Join(dir, "store.db")
			if storeOn == "postgres" {
				store = withPassword(testenv.NewDSN(t, testenv.Postgres))
			}
			down := "postgres://readpast:" + secretPassword + "@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"
			file := filepath.Join(dir, "targets")
			require.NoError(t, os.WriteFile(file, []byte("# the node's targets\nlite1;tags:lite,prod="+lite1+"\nlite2;tags:lite,prod="+lite2+"\n"), 0o600))
			srv := targetNode(t, map[string]string{"READPAST_TARGETS": "pg2;tags:pg,prod;pool:4=" + pg2 + "\n"},
				"--dsn", store, "--poll", "50ms", "--grace", "2s", "--target-check", "1s",
				"--target", "pg1;tags:pg,prod="+pg1, "--target", "down="+down, "--targets-file", file)
			c := &client{t: t, base: "http://" + srv.addr}

			// The targets, as every node publishes them (after the first heartbeat).
			var targets struct {
				Targets []struct {
					Name   string   `json:"name"`
					Tags   []string `json:"tags"`
					Served bool     `json:"served"`
					Nodes  []struct {
						Reachable bool `json:"reachable"`
					} `json:"nodes"`
				} `json:"targets"`
			}
			require.Eventually(t, func() bool {
				c.json("GET", "/api/targets", nil, http.StatusOK, &targets)
				reach := map[string]bool{}
				for _, tg := range targets.Targets {
					reach[tg.Name] = len(tg.Nodes) == 1 && tg.Nodes[0].Reachable
				}
				return len(targets.Targets) == 7 && reach["pg1"] && reach["pg2"] && reach["lite1"] && reach["lite2"] && !reach["down"]
			}, 30*time.Second, 100*time.Millisecond, "store, default, pg1, pg2, lite1, lite2, down; down unreachable")

			// Each task on the target it names: the table lands there.
			type created struct {
				ID int64 `json:"id"`
			}
			var a, b, d created
			c.json("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE on_pg1 (n int)", "target": "pg1"}, http.StatusCreated, &a)
			c.json("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE on_lite2 (n int)", "target": "lite2"}, http.StatusCreated, &b)
			c.json("POST", "/api/tasks", map[string]any{"body": "SELECT 1", "target": "down", "max_attempts": 1}, http.StatusCreated, &d)
			require.Equal(t, "succeeded", c.waitState(a.ID, "succeeded", "failed").State)
			require.Equal(t, "succeeded", c.waitState(b.ID, "succeeded", "failed").State)
			require.Equal(t, []string{"on_pg1"}, testenv.QueryStrings(t, testenv.Postgres, pg1, "SELECT tablename::text FROM pg_tables WHERE tablename = 'on_pg1'"))
			require.Empty(t, testenv.QueryStrings(t, testenv.Postgres, pg2, "SELECT tablename::text FROM pg_tables WHERE tablename = 'on_pg1'"))
			require.Equal(t, []string{"on_lite2"}, testenv.QueryStrings(t, testenv.SQLite, lite2, "SELECT name FROM sqlite_schema WHERE name = 'on_lite2'"))
			failed := c.waitState(d.ID, "succeeded", "failed")
			require.Equal(t, "failed", failed.State, "the server that is down fails its task after its one attempt")
			require.NotNil(t, failed.LastError)

			// Unknown name: refused, named.
			code, out := c.do("POST", "/api/tasks", map[string]any{"body": "SELECT 1", "target": "nosuch"})
			require.Equal(t, http.StatusBadRequest, code, "%s", out)
			require.Contains(t, string(out), `target \"nosuch\", which no node has configured`)
			code, out = c.do("POST", "/api/tasks", map[string]any{"body": "SELECT 1", "targets": []string{"tag:nosuch"}})
			require.Equal(t, http.StatusBadRequest, code, "%s", out)
			require.Contains(t, string(out), "tag:nosuch")
			code, out = c.do("POST", "/api/tasks", map[string]any{"body": "SELECT 1", "target": "pg1", "transactional": true})
			require.Equal(t, http.StatusBadRequest, code, "%s", out)
			require.Contains(t, string(out), "transactional")

			// Fan-out to the four prod targets, two at a time.
			var fan struct {
				FanOut string  `json:"fanout"`
				IDs    []int64 `json:"ids"`
				Tasks  []struct {
					Target string `json:"target"`
				} `json:"tasks"`
			}
			c.json("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE fanned (n int)\nGO\n" + busyBody, "targets": []string{"tag:prod"}, "fanout_limit": 2}, http.StatusCreated, &fan)
			require.Len(t, fan.IDs, 4)
			var names []string
			for _, x := range fan.Tasks {
				names = append(names, x.Target)
			}
			require.Equal(t, []string{"lite1", "lite2", "pg1", "pg2"}, names)
			for _, id := range fan.IDs {
				require.Equal(t, "succeeded", c.waitState(id, "succeeded", "failed").State)
			}
			var groups struct {
				Groups []struct {
					Name       string `json:"name"`
					MaxRunning int    `json:"max_running"`
				} `json:"groups"`
			}
			c.json("GET", "/api/groups", nil, http.StatusOK, &groups)
			limit := 0
			for _, g := range groups.Groups {
				if g.Name == fan.FanOut {
					limit = g.MaxRunning
				}
			}
			require.Equal(t, 2, limit, "at most two servers at once: the fan-out's group limit")
			for _, dsn := range []string{pg1, pg2} {
				require.Equal(t, []string{"fanned"}, testenv.QueryStrings(t, testenv.Postgres, dsn, "SELECT tablename::text FROM pg_tables WHERE tablename = 'fanned'"))
			}
			var page struct {
				Total  int              `json:"total"`
				Counts map[string]int64 `json:"counts"`
				Tasks  []struct {
					StartedAt  time.Time `json:"started_at"`
					FinishedAt time.Time `json:"finished_at"`
				} `json:"tasks"`
			}
			c.json("GET", "/api/fanouts/"+fan.FanOut, nil, http.StatusOK, &page)
			require.Equal(t, 4, page.Total)
			require.Equal(t, int64(4), page.Counts["succeeded"])
			for _, x := range page.Tasks {
				running := 0
				for _, y := range page.Tasks {
					if !y.StartedAt.After(x.StartedAt) && y.FinishedAt.After(x.StartedAt) {
						running++
					}
				}
				require.LessOrEqual(t, running, 2, "at most two servers at once, by the attempts' times")
			}

			// A fan-out with a failure, and its retry in one action.
			c.json("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE fanned (n int)", "targets": []string{"pg1", "down"}, "max_attempts": 1}, http.StatusCreated, &fan)
			for _, id := range fan.IDs {
				c.waitState(id, "succeeded", "failed")
			}
			c.json("GET", "/api/fanouts/"+fan.FanOut, nil, http.StatusOK, &page)
			require.Equal(t, int64(2), page.Counts["failed"], "pg1 has the table already, down is down")
			var retried struct {
				Retried int `json:"retried"`
			}
			c.json("POST", "/api/fanouts/"+fan.FanOut+"/retry", nil, http.StatusOK, &retried)
			require.Equal(t, 2, retried.Retried)

			// A queue's default target.
			c.json("POST", "/api/queues", map[string]any{"name": "lite", "default_target": "lite2"}, http.StatusCreated, nil)
			c.json("PATCH", "/api/queues/lite", map[string]any{"default_target": "lite1"}, http.StatusOK, nil)
			code, out = c.do("PATCH", "/api/queues/lite", map[string]any{"default_target": "nosuch"})
			require.Equal(t, http.StatusBadRequest, code, "%s", out)
			time.Sleep(1500 * time.Millisecond) // the settings watcher reads it within a second
			var q created
			c.json("POST", "/api/tasks", map[string]any{"body": "CREATE TABLE by_default (n int)", "queue": "lite"}, http.StatusCreated, &q)
			require.Equal(t, "succeeded", c.waitState(q.ID, "succeeded", "failed").State)
			require.Equal(t, []string{"by_default"}, testenv.QueryStrings(t, testenv.SQLite, lite1, "SELECT name FROM sqlite_schema WHERE name = 'by_default'"))

			// Every page and export, for the grep.
			for _, p := range []string{"/", "/tasks", fmt.Sprintf("/tasks/%d", a.ID), fmt.Sprintf("/tasks/%d", d.ID), "/nodes", "/logs", "/groups",
				"/audit", "/schedules", "/targets", "/fanouts/" + fan.FanOut, "/api/nodes", "/api/tasks", "/api/queues", "/api/logs",
				"/api/logs?format=ndjson", "/api/audit", "/api/audit?format=ndjson", "/metrics", fmt.Sprintf("/api/tasks/%d", d.ID)} {
				c.do("GET", p, nil)
			}
			// The gauge is the latest check's (every second): one check that
			// failed on a loaded machine is followed by the next.
			var metrics []byte
			require.Eventually(t, func() bool {
				_, metrics = c.do("GET", "/metrics", nil)
				return strings.Contains(string(metrics), `readpast_target_up{dialect="postgres",target="pg1"} 1`)
			}, 30*time.Second, 200*time.Millisecond, "pg1 is up in /metrics")
			require.Contains(t, string(metrics), `readpast_target_up{dialect="postgres",target="down"} 0`)
			require.Equal(t, 0, srv.stop())
			var self bytes.Buffer
			require.Equal(t, 0, run(context.Background(), []string{"selftest", "--dsn", pg1, "--soak", "1s", "--tasks", "50"},
				envOf(map[string]string{"READPAST_TARGETS": "pg2=" + pg2}), &self, &self), "%s", self.String())

			all := c.seen.String() + srv.logs.String() + self.String()
			require.NotContains(t, all, secretPassword, "a password reached an output")
			require.Contains(t, c.seen.String(), "pg1", "the outputs name the targets")
		})
	}
}

// A targets file others can read is refused with what to do.
func TestATargetsFileOthersCanReadIsRefused(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "targets")
	require.NoError(t, os.WriteFile(file, []byte("db1=postgres://u:"+secretPassword+"@h/db\n"), 0o644))
	require.NoError(t, os.Chmod(file, 0o644))
	var out bytes.Buffer
	code := run(context.Background(), []string{"--targets-file", file, "--listen", freeAddr(t)}, envOf(nil), &out, &out)
	require.Equal(t, 2, code, "%s", out.String())
	require.Contains(t, out.String(), "chmod 600 "+file)
	require.NotContains(t, out.String(), secretPassword)
	for _, bad := range []string{"db1", "store=sqlite://x.db", "a b=x.db", "db1;pool:0=x.db", "db1;color:red=x.db", "db1=mysql://u:" + secretPassword + "@h/db"} {
		out.Reset()
		code := run(context.Background(), []string{"--target", bad, "--listen", freeAddr(t)}, envOf(nil), &out, &out)
		require.Equal(t, 2, code, "%s: %s", bad, out.String())
		require.NotContains(t, out.String(), secretPassword)
	}
}
