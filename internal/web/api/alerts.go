package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/alerts"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
)

// Alerts is GET /api/alerts: what this node's alerts configuration holds
// (names only: no address, URL or secret) and the conditions firing now.
type Alerts struct {
	Configured bool                  `json:"configured"`
	Operators  []alerts.OperatorInfo `json:"operators"`
	Rules      []AlertRule           `json:"rules"`
	Firing     []AlertCondition      `json:"firing"`
}

// AlertRule is a configured rule.
type AlertRule struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Operators []string `json:"operators"`
	Queues    []string `json:"queues"`
	Schedules []string `json:"schedules"`
	Jobs      []string `json:"jobs"`
	Targets   []string `json:"targets"`
	Threshold *string  `json:"threshold"`
	Window    *string  `json:"window"`
	// MedianFactor: task_long_running against k × the median of the
	// schedule's last runs.
	MedianFactor *float64 `json:"median_factor"`
	Recovery     bool     `json:"recovery"`
	Doc          string   `json:"doc"`
}

// AlertCondition is a condition rule's subject firing now.
type AlertCondition struct {
	Key    string    `json:"key"`
	Since  time.Time `json:"since"`
	Detail string    `json:"detail"`
}

// AlertDelivery is one message to one channel of one operator.
type AlertDelivery struct {
	ID        int64      `json:"id"`
	AlertID   string     `json:"alert_id"`
	Rule      string     `json:"rule"`
	Operator  string     `json:"operator"`
	Channel   string     `json:"channel"`
	Kind      string     `json:"kind"`
	Subject   string     `json:"subject"`
	Count     int        `json:"count"`
	State     string     `json:"state"`
	Attempts  int        `json:"attempts"`
	NextTry   *time.Time `json:"next_try"` // pending only
	LastError *string    `json:"last_error"`
	CreatedAt time.Time  `json:"created_at"`
	EndedAt   *time.Time `json:"ended_at"`
}

// AlertDeliveryPage is one page of GET /api/alerts/deliveries.
type AlertDeliveryPage struct {
	Deliveries []AlertDelivery `json:"deliveries"`
	NextCursor *int64          `json:"next_cursor"`
}

func (h *Handler) getAlerts(c echo.Context) error {
	out := Alerts{Operators: []alerts.OperatorInfo{}, Rules: []AlertRule{}, Firing: []AlertCondition{}}
	if a := h.d.Alerts; a != nil {
		out.Configured = a.Configured()
		out.Operators = append(out.Operators, a.Operators()...)
		for _, r := range a.Rules() {
			out.Rules = append(out.Rules, toAlertRule(r))
		}
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	conds, err := h.d.Store.AlertConditions(ctx)
	if err != nil {
		return err
	}
	for _, f := range conds {
		out.Firing = append(out.Firing, AlertCondition{Key: f.Key, Since: f.Since, Detail: f.Detail})
	}
	return WriteJSON(c, http.StatusOK, out)
}

func toAlertRule(r alerts.RuleInfo) AlertRule {
	out := AlertRule{Name: r.Name, Kind: r.Kind, Operators: r.Operators, Queues: orEmpty(r.Queues), Schedules: orEmpty(r.Schedules),
		Jobs: orEmpty(r.Jobs), Targets: orEmpty(r.Targets),
		Recovery: r.Recovery, Doc: r.Doc}
	if r.Threshold > 0 {
		s := time.Duration(r.Threshold).String()
		out.Threshold = &s
	}
	if w := r.EffectiveWindow(); w >= 0 {
		s := w.String()
		out.Window = &s
	}
	if r.MedianFactor > 0 {
		out.MedianFactor = &r.MedianFactor
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// listAlertDeliveries is GET /api/alerts/deliveries?state=&limit=&cursor=:
// deliveries newest first, one keyset page (viewer).
func (h *Handler) listAlertDeliveries(c echo.Context) error {
	q, err := queryParams(c, "state", "cursor", "limit")
	if err != nil {
		return err
	}
	aq := queue.AlertDeliveryQuery{State: q.Get("state")}
	if aq.Before, err = intParam(q, "cursor", 1); err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 1)
	if err != nil {
		return err
	}
	aq.Limit = int(min(limit, queue.MaxAuditPage+1))
	_, want, err := queue.CheckAlertDeliveryQuery(aq)
	if err != nil {
		return err
	}
	aq.Limit = want
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	ds, err := h.d.Store.AlertDeliveries(ctx, aq)
	if err != nil {
		return err
	}
	out := AlertDeliveryPage{Deliveries: make([]AlertDelivery, len(ds))}
	for i, d := range ds {
		out.Deliveries[i] = toAlertDelivery(d)
	}
	if len(ds) == want && len(ds) > 0 {
		next := ds[len(ds)-1].ID
		out.NextCursor = &next
	}
	return WriteJSON(c, http.StatusOK, out)
}

func toAlertDelivery(d queue.AlertDelivery) AlertDelivery {
	out := AlertDelivery{ID: d.ID, AlertID: d.Key, Rule: d.Rule, Operator: d.Operator, Channel: d.Channel, Kind: d.Kind,
		Subject: d.Subject, Count: d.Count, State: d.State, Attempts: d.Attempts, LastError: orNull(d.LastError),
		CreatedAt: d.CreatedAt, EndedAt: optTime(d.EndedAt)}
	if d.State == queue.AlertPending {
		out.NextTry = optTime(d.NextAt)
	}
	return out
}

// alertTest is the body of POST /api/alerts/test.
type alertTest struct {
	Operator string `json:"operator"`
}

// sendAlertTest is POST /api/alerts/test {"operator": "dba"}: a test
// message to every channel of the operator, audited (operator role). 202:
// it is queued; GET /api/alerts/deliveries shows how it went.
func (h *Handler) sendAlertTest(c echo.Context) error {
	var in alertTest
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	if h.d.Alerts == nil || !h.d.Alerts.Configured() {
		return &queue.ValidationError{Field: "operator", Reason: "cannot be reached: alerts are not configured on this node (start it with --alerts-config)"}
	}
	if err := h.d.Alerts.SendTest(c.Request().Context(), in.Operator, auth.Actor(c)); err != nil {
		return err
	}
	return WriteJSON(c, http.StatusAccepted, map[string]string{"operator": in.Operator, "status": "queued"})
}
