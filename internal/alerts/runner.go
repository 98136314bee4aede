package alerts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"readpast/internal/queue"
	"readpast/internal/target"
)

// Options tune a Runner; zero values take the defaults.
type Options struct {
	Node        string        // this node's id: the holder of what it claims
	Poll        time.Duration // how often events and due deliveries are looked for (1s)
	CheckEvery  time.Duration // how often condition rules are checked (15s)
	Lease       time.Duration // how long a claimed event or delivery is this node's (1m)
	RetryBase   time.Duration // the first retry's delay, doubled each time (10s)
	RetryMax    time.Duration // the longest delay between retries (1h)
	MaxAttempts int           // attempts before a delivery is given up (12: about 6 hours)
	SendTimeout time.Duration // one send's limit (30s)
	Keep        time.Duration // how long ended deliveries stay listed (168h)
	Logger      *slog.Logger
	HTTPClient  *http.Client
	Observer    Observer // counts sends; nil: none
}

// Observer is told how each send ended: channel is "email" or "webhook",
// result "sent", "failed" (tried again later) or "given_up".
type Observer interface {
	Delivered(channel, result string)
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Poll, time.Second)
	def(&o.CheckEvery, 15*time.Second)
	def(&o.Lease, time.Minute)
	def(&o.RetryBase, 10*time.Second)
	def(&o.RetryMax, time.Hour)
	def(&o.SendTimeout, 30*time.Second)
	def(&o.Keep, 7*24*time.Hour)
	if o.SendTimeout > o.Lease/2 {
		o.SendTimeout = o.Lease / 2 // a send ends well within its lease
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 12
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.SendTimeout}
	}
	return o
}

// Runner is a node's alerts loop: it turns events into deliveries, checks
// the condition rules, and sends due deliveries. It runs beside the
// workers and never holds anything they wait for: its store calls are
// short transactions of their own tables, and a slow receiver only delays
// the next send. Without a configuration it only purges.
type Runner struct {
	cfg   *Config
	store queue.Store
	opt   Options
	log   *slog.Logger
	wake  chan struct{}
}

// New returns a runner of cfg (nil: alerts are not configured on this node).
func New(store queue.Store, cfg *Config, opt Options) *Runner {
	opt = opt.withDefaults()
	return &Runner{cfg: cfg, store: store, opt: opt, log: opt.Logger.With("component", "alerts"), wake: make(chan struct{}, 1)}
}

// Configured reports whether this node has operators to notify.
func (r *Runner) Configured() bool { return r.cfg != nil && len(r.cfg.Operators) > 0 }

// Run works until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	loop := func(every time.Duration, wake bool, fn func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				fn(ctx)
				var woken <-chan struct{}
				if wake {
					woken = r.wake
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-woken:
				}
			}
		}()
	}
	loop(time.Hour, false, r.purge)
	if r.Configured() {
		loop(r.opt.Poll, false, r.digestEvents)
		loop(r.opt.Poll, true, r.deliverDue)
		loop(r.opt.CheckEvery, false, r.checkConditions)
	}
	wg.Wait()
	return nil
}

// digestEvents consumes a batch of events into deliveries, until none is left.
func (r *Runner) digestEvents(ctx context.Context) {
	for ctx.Err() == nil {
		events, err := r.store.ClaimAlertEvents(ctx, r.opt.Node, 500, r.opt.Lease)
		if err != nil {
			r.log.Warn("alerts: reading events failed; trying again", "err", err)
			return
		}
		if len(events) == 0 {
			return
		}
		ids := make([]int64, len(events))
		for i, e := range events {
			ids[i] = e.ID
		}
		ds := r.cfg.digest(events)
		if _, err := r.store.WriteAlerts(ctx, queue.AlertWrite{Node: r.opt.Node, Events: ids, Deliveries: ds}); err != nil {
			r.log.Warn("alerts: recording deliveries failed; the events are taken again when their lease ends", "events", len(ids), "err", err)
			return
		}
		r.log.Debug("alerts: events digested", "events", len(events), "deliveries", len(ds))
		r.markFailingSchedules(ctx, events)
		r.nudge() // a delivery with no window is due now
		if len(events) < 500 {
			return
		}
	}
}

// markFailingSchedules records, for each task_failed rule with Recovery, the
// schedules whose run failed as a condition firing ("<rule>|schedule s"),
// without a message of its own (the failure's digest is it): the check
// ends it, with a recovery message, when the schedule's latest run
// succeeds. Best effort: a node that dies between the digest and this
// write loses that recovery message, never the failure's.
func (r *Runner) markFailingSchedules(ctx context.Context, events []queue.AlertEvent) {
	done := map[string]bool{}
	for _, e := range events {
		if e.Schedule == "" {
			continue
		}
		for _, rule := range r.cfg.Rules {
			k := kinds[rule.Kind]
			key := conditionKey(rule, "schedule "+e.Schedule)
			if !rule.Recovery || k.event != e.Kind || done[key] || !k.match(rule, e) {
				continue
			}
			done[key] = true
			c := &queue.AlertConditionChange{Key: key, Firing: true, Detail: eventSubject(e)}
			if _, err := r.store.WriteAlerts(ctx, queue.AlertWrite{Condition: c}); err != nil {
				r.log.Warn("alerts: recording a failing schedule failed; its recovery will not be told", "rule", rule.Name, "err", err)
			}
		}
	}
}

// recoveredSchedules are the subjects ("schedule s") of an event rule's
// failing schedules whose latest run has succeeded since.
func recoveredSchedules(ctx context.Context, s queue.Store) (map[string]bool, error) {
	scheds, err := s.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, sc := range scheds {
		if sc.LastTaskState == queue.StateSucceeded {
			out["schedule "+sc.Name] = true
		}
	}
	return out, nil
}

// checkConditions evaluates every condition rule: a subject wrong now and
// not firing yet starts (and notifies); a firing one that is fine again
// ends (and notifies with Recovery).
func (r *Runner) checkConditions(ctx context.Context) {
	firing, err := r.store.AlertConditions(ctx)
	if err != nil {
		r.log.Warn("alerts: reading conditions failed", "err", err)
		return
	}
	now := time.Now()
	var recovered map[string]bool // read once, when an event rule has schedules failing
	for _, rule := range r.cfg.Rules {
		k := kinds[rule.Kind]
		if k.isEvent() && rule.Recovery {
			prefix := conditionKey(rule, "")
			for _, f := range firing {
				subject, ok := strings.CutPrefix(f.Key, prefix)
				if !ok {
					continue
				}
				if recovered == nil {
					if recovered, err = recoveredSchedules(ctx, r.store); err != nil {
						r.log.Warn("alerts: reading schedules failed", "err", err)
						return
					}
				}
				if !recovered[subject] {
					continue
				}
				c := condition{Subject: subject, Text: subject + " ran successfully again after: " + f.Detail}
				w := queue.AlertWrite{Condition: &queue.AlertConditionChange{Key: f.Key},
					Deliveries: r.cfg.conditionDeliveries(rule, c, false, f.Since)}
				if _, err := r.store.WriteAlerts(ctx, w); err != nil {
					r.log.Warn("alerts: recording a recovery failed", "rule", rule.Name, "err", err)
				}
			}
			continue
		}
		if k.conditions == nil {
			continue
		}
		found, err := k.conditions(ctx, r.store, rule, now)
		if err != nil {
			r.log.Warn("alerts: checking a rule failed", "rule", rule.Name, "err", err)
			continue
		}
		prefix := conditionKey(rule, "")
		wrong := map[string]bool{}
		for _, c := range found {
			key := conditionKey(rule, c.Subject)
			wrong[key] = true
			if firingHas(firing, key) {
				continue
			}
			w := queue.AlertWrite{Condition: &queue.AlertConditionChange{Key: key, Firing: true, Detail: c.Text},
				Deliveries: r.cfg.conditionDeliveries(rule, c, true, now)}
			if _, err := r.store.WriteAlerts(ctx, w); err != nil {
				r.log.Warn("alerts: recording a condition failed", "rule", rule.Name, "err", err)
			}
		}
		for _, f := range firing {
			if !strings.HasPrefix(f.Key, prefix) || wrong[f.Key] {
				continue
			}
			c := condition{Subject: strings.TrimPrefix(f.Key, prefix), Text: f.Detail}
			w := queue.AlertWrite{Condition: &queue.AlertConditionChange{Key: f.Key}}
			if rule.Recovery {
				w.Deliveries = r.cfg.conditionDeliveries(rule, c, false, f.Since)
			}
			if _, err := r.store.WriteAlerts(ctx, w); err != nil {
				r.log.Warn("alerts: recording a recovery failed", "rule", rule.Name, "err", err)
			}
		}
	}
	r.nudge()
}

// conditionKey is a condition's key: the rule and its subject.
func conditionKey(r Rule, subject string) string {
	k := r.Name + "|" + subject
	if len(k) > queue.MaxAlertKey {
		k = r.Name + "|" + alertKey(subject)
	}
	return k
}

func firingHas(cs []queue.AlertCondition, key string) bool {
	for _, c := range cs {
		if c.Key == key {
			return true
		}
	}
	return false
}

// nudge wakes the delivery loop.
func (r *Runner) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// deliverDue sends the due deliveries this node claims, each in a goroutine
// of its own, and records how each ended.
func (r *Runner) deliverDue(ctx context.Context) {
	ds, err := r.store.ClaimAlertDeliveries(ctx, r.opt.Node, 20, r.opt.Lease)
	if err != nil {
		r.log.Warn("alerts: claiming deliveries failed", "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.deliver(ctx, d)
		}()
	}
	wg.Wait()
}

func (r *Runner) deliver(ctx context.Context, d queue.AlertDelivery) {
	sctx, cancel := context.WithTimeout(ctx, r.opt.SendTimeout)
	err := r.send(sctx, d)
	cancel()
	end := queue.AlertDeliveryEnd{ID: d.ID, Node: r.opt.Node, Attempt: d.Attempts, Sent: err == nil}
	if err != nil {
		end.Error = r.redact(err.Error())
		end.GiveUp = errors.Is(err, errGone) || d.Attempts >= r.opt.MaxAttempts
		end.RetryAt = time.Now().Add(r.backoff(d.Attempts))
	}
	// The end is recorded even when the node is stopping: a send that
	// happened must not be sent again for want of its record.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.store.EndAlertDelivery(ectx, end); err != nil {
		r.log.Warn("alerts: recording a delivery's end failed; it may be sent again (the receiver dedupes by alert id)", "alert", d.Key, "err", err)
	}
	// Counted and logged once recorded: what the log and /metrics say of a
	// delivery, the Alerts page and the API already show.
	r.observe(d, &end)
	if err != nil {
		r.log.Warn("alerts: a delivery failed", "alert", d.Key, "operator", d.Operator, "channel", d.Channel,
			"attempt", d.Attempts, "given_up", end.GiveUp, "err", end.Error)
	} else {
		r.log.Info("alerts: sent", "alert", d.Key, "operator", d.Operator, "channel", d.Channel, "rule", d.Rule, "count", d.Count)
	}
}

// observe counts how a send ended.
func (r *Runner) observe(d queue.AlertDelivery, end *queue.AlertDeliveryEnd) {
	if r.opt.Observer == nil {
		return
	}
	channel, _, _ := strings.Cut(d.Channel, ":")
	result := "sent"
	switch {
	case end.GiveUp:
		result = "given_up"
	case !end.Sent:
		result = "failed"
	}
	r.opt.Observer.Delivered(channel, result)
}

// backoff is the delay before retry n+1.
func (r *Runner) backoff(attempts int) time.Duration {
	d := r.opt.RetryBase
	for i := 1; i < attempts && d < r.opt.RetryMax; i++ {
		d *= 2
	}
	return min(d, r.opt.RetryMax)
}

// send sends one delivery through its channel.
func (r *Runner) send(ctx context.Context, d queue.AlertDelivery) error {
	op := r.cfg.operator(d.Operator)
	if op == nil {
		return fmt.Errorf("this node's alerts configuration has no operator %s: give every node the same configuration", d.Operator)
	}
	m := r.cfg.message(d)
	if d.Channel == "email" {
		if len(op.Email) == 0 || r.cfg.SMTP == nil {
			return fmt.Errorf("operator %s has no e-mail address in this node's alerts configuration", d.Operator)
		}
		return r.cfg.SMTP.sendEmail(ctx, op.Email, m)
	}
	w := op.webhook(d.Channel)
	if w == nil {
		return fmt.Errorf("operator %s has no channel %s in this node's alerts configuration", d.Operator, d.Channel)
	}
	return w.send(ctx, r.opt.HTTPClient, m)
}

// redact blanks the configuration's secrets out of a text, as a target's
// are blanked out of its errors.
func (r *Runner) redact(s string) string { return target.Redact(s, r.cfg.secrets()) }

func (r *Runner) purge(ctx context.Context) {
	n, err := r.store.PurgeAlerts(ctx, time.Now().Add(-r.opt.Keep), 1000)
	if err != nil {
		r.log.Warn("alerts: purging old deliveries failed", "err", err)
		return
	}
	if n > 0 {
		r.log.Debug("alerts: purged", "rows", n)
	}
}

// SendTest queues a test message to every channel of an operator, audited
// as actor's, and wakes the sender.
func (r *Runner) SendTest(ctx context.Context, operator, actor string) error {
	if !r.Configured() {
		return errors.New("alerts are not configured on this node: start it with --alerts-config")
	}
	op := r.cfg.operator(operator)
	if op == nil {
		return &queue.ValidationError{Field: "operator", Reason: fmt.Sprintf("%q is not an operator of this node's alerts configuration", operator)}
	}
	now := time.Now()
	var ds []queue.NewAlertDelivery
	for _, ch := range op.channels() {
		ds = append(ds, queue.NewAlertDelivery{Key: alertKey("test", op.Name, ch, now.Format(time.RFC3339Nano)), Once: true,
			Rule: "test", Operator: op.Name, Channel: ch, Kind: KindTest, Scope: "operator " + op.Name,
			Subject: "test message from ReadPast to " + op.Name + " (sent by " + actor + ")", Count: 1})
	}
	_, err := r.store.WriteAlerts(ctx, queue.AlertWrite{Deliveries: ds, Actor: actor, Action: "send_test_alert",
		AuditTarget: "operator " + op.Name, AuditDetail: strings.Join(op.channels(), ", ")})
	r.nudge()
	return err
}

// OperatorInfo is an operator as pages show it: names only, no address,
// URL or secret.
type OperatorInfo struct {
	Name     string   `json:"name"`
	Channels []string `json:"channels"`
}

// RuleInfo is a rule as pages show it.
type RuleInfo struct {
	Rule
	Doc string `json:"doc"`
}

// Operators lists the configured operators.
func (r *Runner) Operators() []OperatorInfo {
	if r.cfg == nil {
		return nil
	}
	var out []OperatorInfo
	for _, o := range r.cfg.Operators {
		out = append(out, OperatorInfo{Name: o.Name, Channels: o.channels()})
	}
	return out
}

// Rules lists the configured rules.
func (r *Runner) Rules() []RuleInfo {
	if r.cfg == nil {
		return nil
	}
	var out []RuleInfo
	for _, rule := range r.cfg.Rules {
		out = append(out, RuleInfo{Rule: rule, Doc: KindDoc(rule.Kind)})
	}
	return out
}
