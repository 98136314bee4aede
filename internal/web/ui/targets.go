package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// targetsPage lists every target the nodes publish (docs/TARGETS.md), each
// node's latest check of it, the tasks running there and, for the targets
// this node serves, what their sessions do now.
func (u *Pages) targetsPage(c echo.Context) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	known, err := u.ops.Targets(ctx)
	if err != nil {
		return err
	}
	nodes, err := u.cluster(ctx)
	if err != nil {
		return err
	}
	now := u.now()
	v := templates.Targets{Page: u.page(c, "targets", "Targets", templates.Live{}, nil)}
	for _, k := range known {
		tv := templates.TargetView{Name: k.Name, Dialect: k.Dialect, Tags: k.Tags, Served: k.Served()}
		for _, n := range k.Nodes {
			st := n.Status
			tv.Checks = append(tv.Checks, templates.TargetCheck{Node: n.Node, Reachable: st.Reachable,
				Latency: latency(st), Checked: showTime(st.Checked, now), Error: st.Error, Sessions: st.Sessions})
			if tv.Version == "" {
				tv.Version = st.Version
			}
		}
		var sessions []string
		byTask := map[string]int64{}
		for _, n := range nodes {
			if n.Gone {
				continue
			}
			for _, p := range n.Info.Pools {
				for _, b := range p.Busy {
					if b.Target != k.Name || (k.Name == target.DefaultName && !n.This) {
						continue
					}
					tv.Running = append(tv.Running, templates.RunningOn{TaskID: b.TaskID, TaskURL: taskURL(b.TaskID), Node: n.ID,
						Session: b.SessionID, For: runningFor(b.StartedAt, now)})
					if b.SessionID != "" {
						sessions = append(sessions, b.SessionID)
						byTask[b.SessionID] = b.TaskID
					}
				}
			}
		}
		if len(sessions) > 0 {
			tv.Activity = u.activity(ctx, k.Name, sessions, byTask)
		}
		v.Targets = append(v.Targets, tv)
	}
	return render(c, http.StatusOK, templates.TargetsPage(v))
}

// latency is a check's round trip, "—" before the first or after a failure.
func latency(st target.Status) string {
	if st.Checked.IsZero() || !st.Reachable {
		return "—"
	}
	return showDuration(st.Latency)
}

// activity reads what the sessions of the named target do now, through
// this node's own connection to it (at most once a second per target:
// target.Set.Activity); byTask maps a session to the task it runs.
func (u *views) activity(ctx context.Context, name string, sessions []string, byTask map[string]int64) *templates.ActivityView {
	av := &templates.ActivityView{Target: name}
	if u.targets == nil || !u.targets.Serves(name) {
		av.Note = "this node does not serve " + name + ": open the dashboard of a node that does to see its sessions"
		return av
	}
	rep, err := u.targets.Activity(ctx, name, sessions)
	switch {
	case err != nil:
		av.Error = "reading the sessions failed: " + err.Error()
		return av
	case rep.Unsupported:
		av.Note = "SQLite has no view of other sessions: nothing waits on a server here"
		return av
	}
	av.Missing = rep.Missing
	for _, a := range rep.Sessions {
		sv := templates.SessionView{Session: a.SessionID, State: a.State, Command: a.Command, Wait: a.Wait,
			BlockedBy: strings.Join(a.BlockedBy, ", "), Elapsed: ms(a.ElapsedMS), Statement: firstLine(a.Statement, 120), App: a.Application}
		if a.Wait != "" {
			sv.WaitFor = ms(a.WaitMS)
		}
		if a.CPUMS > 0 || a.Reads > 0 {
			sv.CPU, sv.Reads = ms(a.CPUMS), strconv.FormatInt(a.Reads, 10)
		}
		if id, ok := byTask[a.SessionID]; ok {
			sv.TaskID, sv.TaskURL = id, taskURL(id)
		} else {
			sv.Blocker = true
		}
		av.Sessions = append(av.Sessions, sv)
	}
	// ReadPast's sessions first, then their blockers.
	sort.SliceStable(av.Sessions, func(i, j int) bool { return !av.Sessions[i].Blocker && av.Sessions[j].Blocker })
	return av
}

func ms(n int64) string { return showDuration(time.Duration(n) * time.Millisecond) }

// runningActivity is what the running task's session does now, found in
// the heartbeat of the node that runs it ("" when it runs nowhere yet).
func (u *views) runningActivity(ctx context.Context, t *queue.Task) *templates.ActivityView {
	if t.State != queue.StateRunning || u.targets == nil {
		return nil
	}
	nodes, err := u.cluster(ctx)
	if err != nil {
		return nil
	}
	for _, n := range nodes {
		for _, p := range n.Info.Pools {
			for _, b := range p.Busy {
				if b.TaskID != t.ID || b.SessionID == "" {
					continue
				}
				if b.Target == target.DefaultName && !n.This {
					return &templates.ActivityView{Target: b.Target, Note: "it runs on the default target of node " + n.ID + ": open that node's dashboard to see its session"}
				}
				return u.activity(ctx, b.Target, []string{b.SessionID}, map[string]int64{b.SessionID: t.ID})
			}
		}
	}
	return nil
}

// fanOutPage is one fan-out: a row per target with its state, duration,
// rows and error, "3 of 40 failed", and the retry of the failed ones.
func (u *Pages) fanOutPage(c echo.Context) error {
	group := request.PathParam(c, "group")
	if !ops.IsFanOut(group) {
		return &queue.ValidationError{Field: "fanout", Reason: fmt.Sprintf("%q is not a fan-out (their names start with %s)", group, ops.FanOutPrefix)}
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	tasks, err := u.ops.FanOutTasks(ctx, group)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return fmt.Errorf("fan-out %s: %w", group, queue.ErrNotFound)
	}
	v := templates.FanOut{Page: u.page(c, "groups", "Fan-out "+group, templates.Live{}, nil), Group: group,
		CanRetry: auth.Can(c, auth.Operator)}
	counts := map[queue.State]int{}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Target < tasks[j].Target })
	for _, t := range tasks {
		counts[t.State]++
		r := templates.FanOutRow{Target: t.Target, TaskID: t.ID, TaskURL: taskURL(t.ID), State: string(t.State), Error: firstLine(t.LastError, 160)}
		if !t.StartedAt.IsZero() {
			end := t.FinishedAt
			if end.IsZero() {
				end = u.now()
			}
			r.Duration = showDuration(end.Sub(t.StartedAt))
		}
		if recs, err := u.store.TaskAttempts(ctx, t.ID); err == nil && len(recs) > 0 {
			r.Rows = strconv.FormatInt(recs[len(recs)-1].RowsAffected, 10)
		}
		v.Rows = append(v.Rows, r)
	}
	v.Failed = counts[queue.StateFailed] + counts[queue.StateCancelled]
	v.Summary = fmt.Sprintf("%d of %d failed", v.Failed, len(tasks))
	if v.Failed == 0 {
		v.Summary = fmt.Sprintf("%d of %d succeeded", counts[queue.StateSucceeded], len(tasks))
	}
	for _, st := range queue.States {
		v.Counts = append(v.Counts, templates.KV{Key: string(st), Value: strconv.Itoa(counts[st])})
	}
	return render(c, http.StatusOK, templates.FanOutPage(v))
}

// retryFanOut retries the failed tasks of a fan-out and comes back to it.
func (u *Pages) retryFanOut(c echo.Context) error {
	group := request.PathParam(c, "group")
	n, err := u.ops.RetryFailed(c.Request().Context(), auth.Actor(c), group)
	if err != nil {
		return err
	}
	u.flash(c, fmt.Sprintf("%d failed tasks of the fan-out run again.", n))
	return c.Redirect(http.StatusSeeOther, "/fanouts/"+group)
}

// fanOutFromForm enqueues the form's task as a fan-out when it names
// targets; ok false when it names none.
func (u *Pages) fanOutFromForm(c echo.Context, form templates.TaskForm, base queue.NewTask) (group string, errs map[string]string, err error) {
	selectors := splitSelectors(form.Targets)
	limit := 0
	if form.FanOutLimit != "" {
		n, convErr := strconv.Atoi(form.FanOutLimit)
		if convErr != nil || n < 1 {
			return "", map[string]string{"fanout_limit": fmt.Sprintf("%q is not a number of servers (1 or more)", form.FanOutLimit)}, nil
		}
		limit = n
	}
	f, err := u.ops.EnqueueFanOut(c.Request().Context(), auth.Actor(c), base, selectors, limit)
	var ve *queue.ValidationError
	if errors.As(err, &ve) {
		field, msg := formField(ve)
		return "", map[string]string{field: msg}, nil
	}
	if err != nil {
		return "", nil, err
	}
	return f.Group, nil, nil
}

// targetChoices are the names and tag:NAME selectors the enqueue form
// offers, from the nodes' published targets.
func (u *Pages) targetChoices(ctx context.Context) []string {
	known, err := u.ops.Targets(ctx)
	if err != nil {
		return nil
	}
	var names []string
	tags := map[string]bool{}
	for _, k := range known {
		names = append(names, k.Name)
		for _, t := range k.Tags {
			tags[ops.Tagged+t] = true
		}
	}
	for t := range tags {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}

// whyTarget says why a pending task waits for its target: no live node
// serves it ("" when one does, or the task does not wait for that).
func (u *views) whyTarget(ctx context.Context, t *queue.Task) string {
	if t.State != queue.StatePending || u.ops == nil {
		return ""
	}
	known, err := u.ops.Targets(ctx)
	if err != nil {
		return ""
	}
	def := ""
	if t.Target == "" {
		if qs, err := u.store.QueueSettings(ctx); err == nil {
			for _, q := range qs {
				if q.Name == t.Queue {
					def = q.DefaultTarget
				}
			}
		}
	}
	return ops.WhyTarget(t, def, known)
}

// targetShown is a task's target as its page shows it.
func targetShown(name string) string {
	if name == "" {
		return "its queue's default (else the node's)"
	}
	return name
}

// splitSelectors reads a form's fan-out field: names and tags separated by
// commas; nil when it names none.
func splitSelectors(field string) []string {
	var selectors []string
	for _, s := range strings.Split(field, ",") {
		if s = strings.TrimSpace(s); s != "" {
			selectors = append(selectors, s)
		}
	}
	return selectors
}

// fanOutURL is the page of a fan-out's group, "" for another group.
func fanOutURL(group string) string {
	if !ops.IsFanOut(group) {
		return ""
	}
	return "/fanouts/" + group
}
