package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"readpast/internal/queue"
	"readpast/internal/target"
)

// The cluster's targets (docs/TARGETS.md): every node publishes, in the info
// its heartbeat writes (workers.NodeInfo.Targets), the names, dialects and
// tags of the targets it serves with their latest reachability, never a DSN.
// A name is known when a listed node (live, or gone but not yet purged)
// publishes it; it is served when a live node does. Reading the directory
// reads the nodes' rows: as many as there are nodes, not tasks.

// ClusterTarget is one target name as the cluster knows it.
type ClusterTarget struct {
	Name    string
	Dialect string
	Tags    []string
	// Nodes are the live nodes that serve it, each with its latest check.
	Nodes []NodeTarget
	// Known only by nodes that are gone: no live node serves it now.
	GoneOnly bool
}

// NodeTarget is one node's view of a target.
type NodeTarget struct {
	Node   string
	Status target.Status
}

// Served reports whether a live node serves the target.
func (c ClusterTarget) Served() bool { return len(c.Nodes) > 0 }

// nodeTargets is the part of a node's info JSON the directory reads.
type nodeTargets struct {
	Targets []target.Status `json:"targets"`
}

// Targets lists every target name the cluster's nodes publish, by name.
func (o *Ops) Targets(ctx context.Context) ([]ClusterTarget, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	return ClusterTargets(ctx, o.store, o.lease)
}

// ClusterTargets reads the target directory from the nodes' rows of s; a
// node silent for longer than lease is gone.
func ClusterTargets(ctx context.Context, s queue.Store, lease time.Duration) ([]ClusterTarget, error) {
	nodes, err := s.Nodes(ctx, lease)
	if err != nil {
		return nil, err
	}
	byName := map[string]*ClusterTarget{}
	for _, n := range nodes {
		var info nodeTargets
		if json.Unmarshal([]byte(n.Info), &info) != nil {
			continue
		}
		for _, st := range info.Targets {
			c := byName[st.Name]
			if c == nil {
				c = &ClusterTarget{Name: st.Name, Dialect: string(st.Dialect), Tags: st.Tags, GoneOnly: true}
				byName[st.Name] = c
			}
			if !n.Gone {
				c.GoneOnly = false
				c.Nodes = append(c.Nodes, NodeTarget{Node: n.ID, Status: st})
				c.Dialect, c.Tags = string(st.Dialect), st.Tags
			}
		}
	}
	out := make([]ClusterTarget, 0, len(byName))
	for _, c := range byName {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Tagged is the prefix of a fan-out selector that names a tag: "tag:prod".
const Tagged = "tag:"

// CheckTargets refuses a task's target or a queue's default target that no
// node of the cluster knows, with a sentence that names it (a target known
// only to nodes that are down is accepted: its tasks wait, "no node serves
// target X"). The store is always a target.
func CheckTargets(field string, names []string, known []ClusterTarget) error {
	have := map[string]bool{target.StoreName: true, target.DefaultName: true}
	for _, c := range known {
		have[c.Name] = true
	}
	for _, n := range names {
		if n == "" || have[n] {
			continue
		}
		return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("names target %q, which no node has configured: configure it on the nodes that should run it (--target %s=DSN) or correct the name", n, n)}
	}
	return nil
}

// Expand turns a fan-out's selectors ("db1", "tag:prod") into target names,
// each once, sorted. A selector that matches nothing is refused: a fan-out
// to no server is a mistake, not an empty success.
func Expand(selectors []string, known []ClusterTarget) ([]string, error) {
	if len(selectors) == 0 {
		return nil, &queue.ValidationError{Field: "targets", Reason: "is empty: name targets (\"db1\") or tags (\"tag:prod\")"}
	}
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, sel := range selectors {
		if tag, ok := strings.CutPrefix(sel, Tagged); ok {
			if !target.ValidName(tag) {
				return nil, &queue.ValidationError{Field: "targets", Reason: fmt.Sprintf("%q names no tag: write tag:NAME", sel)}
			}
			n := 0
			for _, c := range known {
				for _, t := range c.Tags {
					if t == tag {
						add(c.Name)
						n++
					}
				}
			}
			if n == 0 {
				return nil, &queue.ValidationError{Field: "targets", Reason: fmt.Sprintf("%q matches no target: no node has a target tagged %s", sel, tag)}
			}
			continue
		}
		if err := queue.CheckTargetName("targets", sel); err != nil {
			return nil, err
		}
		if err := CheckTargets("targets", []string{sel}, known); err != nil {
			return nil, err
		}
		add(sel)
	}
	sort.Strings(out)
	return out, nil
}

// WhyTarget says why a pending task waits for its target, or "": no live
// node serves the target it names (or its queue's default target).
func WhyTarget(t *queue.Task, queueDefault string, known []ClusterTarget) string {
	if t.State != queue.StatePending {
		return ""
	}
	name, what := t.Target, "target"
	if name == "" {
		name, what = queueDefault, "its queue's default target"
	}
	if name == "" || name == target.StoreName || name == target.DefaultName {
		return ""
	}
	for _, c := range known {
		if c.Name == name && c.Served() {
			return ""
		}
	}
	return fmt.Sprintf("no node serves %s %s: it waits until a node that has %s configured runs", what, name, name)
}
