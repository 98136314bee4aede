package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two nodes on one store, each with its own SQLite files as targets, two of
// them tagged prod on different nodes: a schedule that fans out to tag:prod
// every second makes, at each fire, one task per prod target (the firing
// node resolves the tag among the targets both nodes publish), each run by
// the node that serves it, once per fire time however the two schedulers
// race.
func TestAScheduleFansOutToTheTaggedTargetsOfEveryNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "store.db")
	args := []string{"--dsn", store, "--poll", "50ms", "--grace", "1s", "--lease", "5s"}
	a := targetNode(t, nil, append(args, "--node-id", "a",
		"--target", "lite1;tags:prod="+filepath.Join(dir, "lite1.db"),
		"--target", "dev1;tags:dev="+filepath.Join(dir, "dev1.db"))...)
	targetNode(t, nil, append(args, "--node-id", "b", "--target", "lite2;tags:prod="+filepath.Join(dir, "lite2.db"))...)
	c := &client{t: t, base: "http://" + a.addr}
	require.Eventually(t, func() bool {
		_, out := c.do("GET", "/api/targets", nil)
		return strings.Contains(string(out), `"name":"lite1"`) && strings.Contains(string(out), `"name":"lite2"`)
	}, 20*time.Second, 100*time.Millisecond, "both nodes publish their targets")

	c.json("POST", "/api/schedules", map[string]any{"name": "every-prod", "cron": "* * * * * *", "overlap": "allow",
		"body": "CREATE TABLE IF NOT EXISTS seen (n int); INSERT INTO seen VALUES (1)", "targets": []string{"tag:prod"}},
		http.StatusCreated, nil)
	type task struct {
		ID     int64   `json:"id"`
		State  string  `json:"state"`
		Target *string `json:"target"`
		Group  *string `json:"group"`
		FireAt *string `json:"fire_at"`
	}
	var page struct {
		Tasks []task `json:"tasks"`
	}
	require.Eventually(t, func() bool {
		c.json("GET", "/api/tasks?schedule=every-prod&state=succeeded&limit=100", nil, http.StatusOK, &page)
		return len(page.Tasks) >= 6
	}, time.Minute, 200*time.Millisecond, "three fires' tasks succeed")
	c.json("PATCH", "/api/schedules/every-prod", map[string]any{"paused": true}, http.StatusOK, nil)

	c.json("GET", "/api/tasks?schedule=every-prod&limit=1000", nil, http.StatusOK, &page)
	byFire := map[string][]string{}
	groups := map[string]string{}
	for _, tk := range page.Tasks {
		require.NotNil(t, tk.FireAt)
		require.NotNil(t, tk.Group)
		byFire[*tk.FireAt] = append(byFire[*tk.FireAt], *tk.Target)
		if g, ok := groups[*tk.FireAt]; ok {
			require.Equal(t, g, *tk.Group, "one fan-out per fire time")
		}
		groups[*tk.FireAt] = *tk.Group
	}
	for at, targets := range byFire {
		slices.Sort(targets)
		require.Equal(t, []string{"lite1", "lite2"}, targets, "fire %s: one task per prod target of either node, no dev", at)
	}
	distinct := map[string]bool{}
	for _, g := range groups {
		distinct[g] = true
	}
	require.Len(t, distinct, len(byFire), "a fan-out group of its own per fire time")
}
