package ui

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/web/templates"
)

// alertsPageSize is one screen of deliveries.
const alertsPageSize = 100

// alertsPage is the Alerts page (viewer): this node's operators (with a
// "Send a test" button for operators) and rules, the conditions firing
// now, and the deliveries newest first, a keyset page at a time
// (?before=id), filtered by ?state=.
func (u *Pages) alertsPage(c echo.Context) error {
	var before int64
	if b := strings.TrimSpace(c.QueryParam("before")); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return &queue.ValidationError{Field: "before", Reason: strconv.Quote(b) + " is not an id: follow the page's Older link"}
		}
		before = n
	}
	state := c.QueryParam("state")
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	ds, err := u.store.AlertDeliveries(ctx, queue.AlertDeliveryQuery{Before: before, State: state, Limit: alertsPageSize})
	if err != nil {
		return err
	}
	conds, err := u.store.AlertConditions(ctx)
	if err != nil {
		return err
	}
	v := templates.Alerts{Page: u.page(c, "alerts", "Alerts", templates.Live{}, nil), State: state}
	now := u.now()
	if a := u.alerts; a != nil {
		v.Configured = a.Configured()
		for _, o := range a.Operators() {
			v.Operators = append(v.Operators, templates.AlertOperator{Name: o.Name, Channels: strings.Join(o.Channels, ", "),
				Test: templates.Action{Label: "Send a test", URL: "/alerts/test", Return: "/alerts",
					Hidden: []templates.KV{{Key: "operator", Value: o.Name}}}})
		}
		for _, r := range a.Rules() {
			var filters []string
			if len(r.Queues) > 0 {
				filters = append(filters, "queues "+strings.Join(r.Queues, ", "))
			}
			if len(r.Schedules) > 0 {
				filters = append(filters, "schedules "+strings.Join(r.Schedules, ", "))
			}
			if len(r.Jobs) > 0 {
				filters = append(filters, "jobs "+strings.Join(r.Jobs, ", "))
			}
			if len(r.Targets) > 0 {
				filters = append(filters, "targets "+strings.Join(r.Targets, ", "))
			}
			if r.ErrorNumber != 0 {
				filters = append(filters, fmt.Sprintf("error %d", r.ErrorNumber))
			}
			if r.MinSeverity != 0 {
				filters = append(filters, fmt.Sprintf("severity ≥ %d", r.MinSeverity))
			}
			if r.SQLStateClass != "" {
				filters = append(filters, "SQLSTATE class "+r.SQLStateClass)
			}
			timing := ""
			if r.Threshold > 0 {
				timing = "after " + time.Duration(r.Threshold).String()
			}
			if r.MedianFactor > 0 {
				timing = strings.TrimPrefix(timing+fmt.Sprintf(", or %g × its schedule's median run", r.MedianFactor), ", ")
			}
			if w := r.EffectiveWindow(); w >= 0 {
				timing = "digest every " + w.String()
			}
			v.Rules = append(v.Rules, templates.AlertRule{Name: r.Name, Kind: r.Kind, Operators: strings.Join(r.Operators, ", "),
				Filters: strings.Join(filters, "; "), Timing: timing, Doc: r.Doc, Recovery: r.Recovery})
		}
	}
	for _, f := range conds {
		v.Firing = append(v.Firing, templates.AlertFiring{Key: f.Key, Since: showTime(f.Since, now), Detail: f.Detail})
	}
	for _, s := range []string{"all", queue.AlertPending, queue.AlertSent, queue.AlertFailed} {
		url := "/alerts"
		if s != "all" {
			url = withQuery("/alerts", "state", s)
		}
		v.Filters = append(v.Filters, templates.Link{Label: s, URL: url})
	}
	for _, d := range ds {
		row := templates.AlertDelivery{ID: d.ID, AlertID: d.Key, Created: showTime(d.CreatedAt, now), Rule: d.Rule,
			Operator: d.Operator, Channel: d.Channel, Subject: d.Subject, State: d.State, Attempts: d.Attempts, LastError: d.LastError}
		if d.Count > 1 {
			row.Count = strconv.Itoa(d.Count)
		}
		if d.State == queue.AlertPending {
			row.NextTry = showTime(d.NextAt, now)
		}
		v.Deliveries = append(v.Deliveries, row)
	}
	var last int64
	if len(ds) > 0 {
		last = ds[len(ds)-1].ID
	}
	query := ""
	if state != "" {
		query = "state=" + state
	}
	v.Newest, v.Older = pages("/alerts", query, before, len(ds), alertsPageSize, last)
	return render(c, http.StatusOK, templates.AlertsPage(v))
}

// sendAlertTest is the Alerts page's "Send a test" button (operator).
func (u *Pages) sendAlertTest(c echo.Context) error {
	op := c.FormValue("operator")
	if u.alerts == nil || !u.alerts.Configured() {
		return &queue.ValidationError{Field: "operator", Reason: "cannot be reached: alerts are not configured on this node (start it with --alerts-config)"}
	}
	if err := u.alerts.SendTest(c.Request().Context(), op, auth.Actor(c)); err != nil {
		return err
	}
	return u.redirectBack(c, "/alerts", fmt.Sprintf("A test message to %s is queued; its deliveries are listed below.", op))
}
