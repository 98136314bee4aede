package alerts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"readpast/internal/queue"
)

// alertKey is the stable alert id of one delivery: the same inputs give the
// same id on every node, so two nodes digesting one window's events merge
// into one delivery, and a receiver dedupes a delivery sent twice by it.
func alertKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "rp-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// digest turns a batch of events into deliveries: for each rule an event
// matches, one per channel of each of the rule's operators, merged per
// window and scope (the queue), due when the window ends. Events no rule
// matches give nothing (they are consumed all the same).
func (c *Config) digest(events []queue.AlertEvent) []queue.NewAlertDelivery {
	var out []queue.NewAlertDelivery
	at := map[string]int{} // key → index in out
	for _, e := range events {
		for _, r := range c.Rules {
			k := kinds[r.Kind]
			if k.event != e.Kind || !k.match(r, e) {
				continue
			}
			scope := "queue " + e.Queue
			win := r.window()
			var windowID string
			due := e.At
			if win > 0 {
				start := e.At.Truncate(win)
				windowID, due = strconv.FormatInt(start.UnixMicro(), 10), start.Add(win)
			} else {
				windowID = "event " + strconv.FormatInt(e.ID, 10)
			}
			for _, opName := range r.Operators {
				op := c.operator(opName)
				if op == nil {
					continue
				}
				for _, ch := range op.channels() {
					key := alertKey(r.Name, op.Name, ch, scope, windowID)
					if i, ok := at[key]; ok {
						out[i].Count++
						continue
					}
					at[key] = len(out)
					out = append(out, queue.NewAlertDelivery{
						Key: key, LateKey: alertKey(key, "late", strconv.FormatInt(e.ID, 10)),
						Rule: r.Name, Operator: op.Name, Channel: ch, Kind: r.Kind, Scope: scope,
						Subject: eventSubject(e), Detail: e.Error, Count: 1, DueAt: due,
					})
				}
			}
		}
	}
	return out
}

// eventSubject words one event.
func eventSubject(e queue.AlertEvent) string {
	what := "failed"
	switch e.Outcome {
	case queue.OutcomeTimedOut:
		what = "timed out"
	case queue.OutcomeLost:
		what = "was lost (its node stopped heartbeating)"
	}
	s := fmt.Sprintf("task %d %s in queue %s after %d attempts", e.TaskID, what, e.Queue, e.Attempts)
	if e.Attempts == 1 {
		s = fmt.Sprintf("task %d %s in queue %s after its only attempt", e.TaskID, what, e.Queue)
	}
	if e.Schedule != "" {
		s += " (schedule " + e.Schedule + ")"
	}
	return s
}

// conditionDeliveries are the deliveries of a condition that started
// (firing) or ended: one per channel of each operator of the rule, sent at
// once, each keyed by the condition and its start so that it is sent once.
func (c *Config) conditionDeliveries(r Rule, cond condition, firing bool, since time.Time) []queue.NewAlertDelivery {
	kind, subject := r.Kind, cond.Text
	state := "firing"
	if !firing {
		kind, state = r.Kind+".recovered", "recovered"
		subject = "recovered: " + cond.Subject + " (" + r.Kind + " since " + since.UTC().Format(time.RFC3339) + ")"
	}
	var out []queue.NewAlertDelivery
	for _, opName := range r.Operators {
		op := c.operator(opName)
		if op == nil {
			continue
		}
		for _, ch := range op.channels() {
			out = append(out, queue.NewAlertDelivery{
				Key:  alertKey(r.Name, op.Name, ch, cond.Subject, state, strconv.FormatInt(since.UnixMicro(), 10)),
				Once: true, Rule: r.Name, Operator: op.Name, Channel: ch, Kind: kind, Scope: cond.Subject,
				Subject: subject, Detail: cond.Text, Count: 1,
			})
		}
	}
	return out
}
