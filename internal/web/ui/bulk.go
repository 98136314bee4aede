package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/web/templates"
)

// tasksPageCountMax bounds the count the tasks page shows on its bulk
// links; the confirmation counts further (ops.BulkCountMax).
const tasksPageCountMax = 10_000

// bulkVerbs are the bulk actions in the order the tasks page offers them.
var bulkVerbs = []struct {
	action queue.BulkAction
	verb   string
	states []queue.State // the states it applies to
	class  string
}{
	{queue.BulkCancel, "Cancel", []queue.State{queue.StatePending, queue.StateRunning}, "danger"},
	{queue.BulkRetry, "Retry", []queue.State{queue.StateFailed, queue.StateCancelled}, ""},
	{queue.BulkDelete, "Delete", []queue.State{queue.StateSucceeded, queue.StateFailed, queue.StateCancelled}, "danger"},
}

// bulkLinks are the tasks page's "Cancel all N matching" links for its
// filter: the actions that apply to the filter's state (all three for any
// state), for an operator, when a task matches.
func (u *Pages) bulkLinks(c echo.Context, p queue.ListParams) ([]templates.BulkLink, error) {
	if !auth.Can(c, auth.Operator) {
		return nil, nil
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	n, err := u.store.CountTasks(ctx, p, tasksPageCountMax+1)
	if err != nil || n == 0 {
		return nil, err
	}
	count := formatThousands(min(n, tasksPageCountMax))
	if n > tasksPageCountMax {
		count = "more than " + count
	}
	var out []templates.BulkLink
	for _, v := range bulkVerbs {
		if p.State != "" && !containsState(v.states, p.State) {
			continue
		}
		out = append(out, templates.BulkLink{Label: fmt.Sprintf("%s all %s matching", v.verb, count), Class: v.class,
			URL: "/tasks/bulk?" + bulkQuery(string(v.action), queue.FilterOf(p))})
	}
	return out, nil
}

func containsState(states []queue.State, st queue.State) bool {
	for _, s := range states {
		if s == st {
			return true
		}
	}
	return false
}

// bulkQuery is the action and the filter as a query string.
func bulkQuery(action string, f queue.TaskFilter) string {
	q := url.Values{"action": {action}}
	for _, kv := range filterKVs(f) {
		q.Set(kv.Key, kv.Value)
	}
	return q.Encode()
}

// filterKVs are the filter's set fields under the tasks list's names.
func filterKVs(f queue.TaskFilter) []templates.KV {
	var out []templates.KV
	for _, kv := range [][2]string{{"state", string(f.State)}, {"queue", f.Queue}, {"group", f.Group}, {"chain", f.Chain},
		{"schedule", f.Schedule}, {"text", f.Text}} {
		if kv[1] != "" {
			out = append(out, templates.KV{Key: kv[0], Value: kv[1]})
		}
	}
	return out
}

// describeFilter is the filter in words: "state pending, queue etl", or
// "any filter" for every task.
func describeFilter(f queue.TaskFilter) string {
	var parts []string
	for _, kv := range filterKVs(f) {
		parts = append(parts, kv.Key+" "+kv.Value)
	}
	if len(parts) == 0 {
		return "no filter (every task)"
	}
	return strings.Join(parts, ", ")
}

// bulkIDs reads the selected tasks' ids (id=…, repeated) of a bulk request;
// none means the request is by its filter.
func bulkIDs(values []string) ([]int64, error) {
	var ids []int64
	for _, v := range values {
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || id < 1 {
			return nil, &queue.ValidationError{Field: "id", Reason: strconv.Quote(v) + " is not a task id"}
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// bulkForm reads a bulk request's action and filter (the tasks list's
// names), from the query of the confirmation or the form that confirms.
func bulkForm(get func(string) string) (queue.BulkAction, queue.TaskFilter, int, error) {
	action := queue.BulkAction(get("action"))
	if !action.Valid() {
		return "", queue.TaskFilter{}, 0, &queue.ValidationError{Field: "action", Reason: strconv.Quote(string(action)) + " is not one of cancel, retry, delete"}
	}
	i := 0
	for i < len(bulkVerbs) && bulkVerbs[i].action != action {
		i++
	}
	f := queue.TaskFilter{State: queue.State(strings.TrimSpace(get("state"))), Queue: strings.TrimSpace(get("queue")),
		Group: strings.TrimSpace(get("group")), Chain: strings.TrimSpace(get("chain")), Schedule: strings.TrimSpace(get("schedule")),
		Text: strings.TrimSpace(get("text"))}
	return action, f, i, queue.CheckBulkSelection(queue.BulkSelection{Filter: &f})
}

// bulkConfirm asks before a bulk operation on a filter starts, with the
// count of the tasks it matches now.
func (u *Pages) bulkConfirm(c echo.Context) error {
	ids, err := bulkIDs(c.QueryParams()["id"])
	if err != nil {
		return err
	}
	action, f, i, err := bulkForm(c.QueryParam)
	if err != nil {
		return err
	}
	var (
		n    = int64(len(ids))
		more bool
	)
	if len(ids) == 0 {
		if n, more, err = u.ops.CountMatching(c.Request().Context(), f); err != nil {
			return err
		}
	} else if err := queue.CheckBulkSelection(queue.BulkSelection{IDs: ids}); err != nil {
		return err
	}
	verb := bulkVerbs[i].verb
	count := formatThousands(n)
	if more {
		count = "more than " + count
	}
	var applies []string
	for _, st := range bulkVerbs[i].states {
		applies = append(applies, string(st))
	}
	v := templates.BulkConfirm{Action: string(action), Verb: verb, Count: count, None: n == 0, Filter: filterKVs(f),
		Describe: describeFilter(f), BackURL: withQuery("/tasks", "state", string(f.State), "queue", f.Queue, "group", f.Group,
			"chain", f.Chain, "schedule", f.Schedule, "text", f.Text),
		Explain: fmt.Sprintf("It applies to %s tasks; the others are counted as skipped.", strings.Join(applies, " or ")),
		Page:    u.page(c, "tasks", fmt.Sprintf("%s %s tasks", verb, count), templates.Live{}, nil)}
	if len(ids) > 0 {
		v.IDs, v.Filter, v.Describe, v.BackURL = ids, nil, "the tasks you selected", "/tasks"
	}
	return render(c, http.StatusOK, templates.BulkConfirmPage(v))
}

// startBulk starts the confirmed bulk operation (ops.StartBulk) and shows
// its progress.
func (u *Pages) startBulk(c echo.Context) error {
	action, f, _, err := bulkForm(c.FormValue)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	ids, err := bulkIDs(form["id"])
	if err != nil {
		return err
	}
	sel := queue.BulkSelection{Filter: &f}
	if len(ids) > 0 {
		sel = queue.BulkSelection{IDs: ids}
	}
	op, err := u.ops.StartBulk(c.Request().Context(), auth.Actor(c), action, sel)
	if err != nil {
		return err
	}
	u.flash(c, fmt.Sprintf("Bulk %s of %s tasks started.", action, formatThousands(op.Matched)))
	return c.Redirect(http.StatusSeeOther, "/bulk/"+strconv.FormatInt(op.ID, 10))
}

// bulk shows a bulk operation's progress; the page reloads itself each
// second until the operation ends.
func (u *Pages) bulk(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return &queue.ValidationError{Field: "id", Reason: strconv.Quote(c.Param("id")) + " is not a bulk operation's id"}
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	op, err := u.store.GetBulk(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("There is no bulk operation %d.", id))
	}
	if err != nil {
		return err
	}
	now := u.now()
	v := templates.BulkView{ID: op.ID, Action: string(op.Action), Selection: op.Selection, Matched: op.Matched, Done: op.Done,
		Skipped: op.Skipped, Finished: op.Finished(), Error: op.Error, CreatedBy: op.CreatedBy,
		Created: showTime(op.CreatedAt, now), Updated: showTime(op.UpdatedAt, now), TasksURL: "/tasks"}
	if sel, err := queue.ParseBulkSelection(op.Selection); err == nil && len(sel.IDs) > 0 {
		v.Selection = fmt.Sprintf("%d selected tasks", len(sel.IDs))
	} else if err == nil && sel.Filter != nil {
		f := *sel.Filter
		v.TasksURL = withQuery("/tasks", "state", string(f.State), "queue", f.Queue, "group", f.Group, "chain", f.Chain, "schedule", f.Schedule, "text", f.Text)
		v.Selection = describeFilter(f)
	}
	switch {
	case op.Finished() && op.Error != "":
		v.Status, v.Percent = "Stopped.", 100
	case op.Finished():
		v.Status, v.Percent = fmt.Sprintf("Finished: %s tasks done, %s skipped.", formatThousands(op.Done), formatThousands(op.Skipped)), 100
	case op.LeaseOwner == "":
		v.Status = "Waiting for a node to take it."
	default:
		v.Status = fmt.Sprintf("Running on node %s: %s of about %s tasks so far.", op.LeaseOwner, formatThousands(op.Done+op.Skipped), formatThousands(op.Matched))
	}
	if !op.Finished() && op.Matched > 0 {
		v.Percent = int(min(99, 100*(op.Done+op.Skipped)/op.Matched))
	}
	refresh := 0
	if !op.Finished() {
		refresh = 1
	}
	v.Page = u.page(c, "tasks", fmt.Sprintf("Bulk %s %d", op.Action, op.ID), templates.Live{}, nil)
	v.Page.Refresh = refresh
	return render(c, http.StatusOK, templates.BulkPage(v))
}

// formatThousands writes n with thin spaces between thousands, as the
// pages' counts are.
func formatThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u2009')
		}
		b.WriteRune(r)
	}
	return b.String()
}
