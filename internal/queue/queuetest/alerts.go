package queuetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// alertDelivery is a delivery of rule r to operator ann's e-mail.
func alertDelivery(key string, n int) queue.NewAlertDelivery {
	return queue.NewAlertDelivery{Key: key, Rule: "r", Operator: "ann", Channel: "email", Kind: queue.AlertEventTaskFailed,
		Scope: "queue etl", Subject: "task 1 failed", Detail: "boom", Count: n}
}

// oneDelivery reads the delivery of key back.
func (b bundle) oneDelivery(t *testing.T, key string) queue.AlertDelivery {
	t.Helper()
	all, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{Limit: 1000})
	require.NoError(t, err)
	for _, d := range all {
		if d.Key == key {
			return d
		}
	}
	t.Fatalf("no delivery %s among %d", key, len(all))
	return queue.AlertDelivery{}
}

var alertTests = map[string]func(*testing.T, Harness){
	// Only a task that ends failed after its last attempt writes an event,
	// in Finish's transaction: a success, a retry and a cancel write none.
	"final_failure_writes_one_event": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Queue: "etl", Body: "ok", MaxAttempts: 1},
			queue.NewTask{Queue: "etl", Body: "fails", MaxAttempts: 1},
			queue.NewTask{Queue: "etl", Body: "retries", MaxAttempts: 2},
			queue.NewTask{Queue: "etl", Body: "cancelled", MaxAttempts: 1},
			queue.NewTask{Queue: "etl", Body: "times out", MaxAttempts: 1})
		var failed, timedOut int64
		for _, task := range b.claim(t, "etl", 5) {
			switch task.Body {
			case "ok":
				b.finish(t, task, queue.OutcomeSucceeded, "")
			case "fails":
				failed = task.ID
				require.Equal(t, queue.StateFailed, b.finish(t, task, queue.OutcomeFailed, "Msg 1205, Level 13, State 51, Line 1: deadlock").State)
			case "retries":
				require.Equal(t, queue.StatePending, b.finish(t, task, queue.OutcomeFailed, "once").State)
			case "cancelled":
				b.finish(t, task, queue.OutcomeCancelled, "")
			case "times out":
				timedOut = task.ID
				b.finish(t, task, queue.OutcomeTimedOut, "timed out after 1s")
			}
		}
		ev, err := b.s.ClaimAlertEvents(b.ctx, "n1", 100, time.Minute)
		require.NoError(t, err)
		require.Len(t, ev, 2, "the failed and the timed-out task, nothing else: %+v", ev)
		require.Equal(t, failed, ev[0].TaskID)
		require.Equal(t, queue.AlertEvent{ID: ev[0].ID, At: ev[0].At, Kind: queue.AlertEventTaskFailed, TaskID: failed, Queue: "etl",
			Outcome: queue.OutcomeFailed, Attempts: 1, Error: "Msg 1205, Level 13, State 51, Line 1: deadlock"}, ev[0])
		require.WithinDuration(t, time.Now(), ev[0].At, time.Minute)
		require.Equal(t, time.UTC, ev[0].At.Location())
		require.Equal(t, timedOut, ev[1].TaskID)
		require.Equal(t, queue.OutcomeTimedOut, ev[1].Outcome)
	},
	// The event of a job step's task that fails for good names the task's
	// target and the step's job, written in the transaction that ends it,
	// for the task_failed rules' jobs and targets filters.
	"event_names_the_target_and_the_job": func(t *testing.T, h Harness) {
		b := setup(t, h)
		createJob(t, b, `{"name": "nightly", "queue": "night", "steps": [{"name": "load", "body": "SELECT 1", "target": "dw"}]}`)
		_, err := jobEditor(b).Run(b.ctx, "nightly", "", "alice")
		require.NoError(t, err)
		b.enqueue(t, queue.NewTask{Queue: "etl", Body: "plain", MaxAttempts: 1})
		for _, q := range []string{"night", "etl"} {
			got := b.claim(t, q, 1)
			require.Len(t, got, 1)
			require.Equal(t, queue.StateFailed, b.finish(t, got[0], queue.OutcomeFailed, "boom").State)
		}
		ev, err := b.s.ClaimAlertEvents(b.ctx, "n1", 100, time.Minute)
		require.NoError(t, err)
		require.Len(t, ev, 2)
		require.Equal(t, []string{"night", "dw", "nightly"}, []string{ev[0].Queue, ev[0].Target, ev[0].Job})
		require.Equal(t, []string{"etl", "", ""}, []string{ev[1].Queue, ev[1].Target, ev[1].Job}, "a task of no job, on its queue's default target")
	},
	// A lease that expires on the last attempt is a failure too: the
	// reclaim writes the event with outcome lost.
	"lost_last_attempt_writes_an_event": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Queue: "etl", Body: "x", MaxAttempts: 1})
		got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "etl", Owner: "n9/w1", Limit: 1, LeaseDuration: time.Millisecond})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Eventually(t, func() bool {
			res, err := b.s.ReclaimExpired(b.ctx, 10)
			require.NoError(t, err)
			return len(res) == 1
		}, 30*time.Second, 20*time.Millisecond)
		ev, err := b.s.ClaimAlertEvents(b.ctx, "n1", 100, time.Minute)
		require.NoError(t, err)
		require.Len(t, ev, 1)
		require.Equal(t, queue.OutcomeLost, ev[0].Outcome)
		require.Equal(t, got[0].ID, ev[0].TaskID)
	},
	// One node at a time holds an event; only its holder consumes it, and
	// a consumption by a node that lost it writes nothing at all.
	"events_are_leased_and_consumed_once": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Queue: "etl", Body: "x", MaxAttempts: 1})
		b.finish(t, b.claim(t, "etl", 1)[0], queue.OutcomeFailed, "boom")
		ev, err := b.s.ClaimAlertEvents(b.ctx, "n1", 10, 50*time.Millisecond)
		require.NoError(t, err)
		require.Len(t, ev, 1)
		none, err := b.s.ClaimAlertEvents(b.ctx, "n2", 10, time.Minute)
		require.NoError(t, err)
		require.Empty(t, none, "held by n1")
		// n1's lease runs out; n2 takes the event over.
		var taken []queue.AlertEvent
		require.Eventually(t, func() bool {
			taken, err = b.s.ClaimAlertEvents(b.ctx, "n2", 10, time.Minute)
			require.NoError(t, err)
			return len(taken) == 1
		}, 30*time.Second, 20*time.Millisecond)
		_, err = b.s.WriteAlerts(b.ctx, queue.AlertWrite{Node: "n1", Events: []int64{ev[0].ID}, Deliveries: []queue.NewAlertDelivery{alertDelivery("k-n1", 1)}})
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		all, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{})
		require.NoError(t, err)
		require.Empty(t, all, "a write refused for a lost event adds nothing")
		ok, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Node: "n2", Events: []int64{taken[0].ID}, Deliveries: []queue.NewAlertDelivery{alertDelivery("k-n2", 1)}})
		require.NoError(t, err)
		require.True(t, ok)
		b.oneDelivery(t, "k-n2")
		time.Sleep(60 * time.Millisecond)
		left, err := b.s.ClaimAlertEvents(b.ctx, "n3", 10, time.Minute)
		require.NoError(t, err)
		require.Empty(t, left, "consumed")
	},
	// Adds under one key merge into one digest until it starts; then they
	// go under the late key. Once adds only a key that is new.
	"deliveries_merge_into_a_digest": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for _, n := range []int{1, 3, 996} {
			_, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{alertDelivery("k", n)}})
			require.NoError(t, err)
		}
		d := b.oneDelivery(t, "k")
		require.Equal(t, 1000, d.Count)
		require.Equal(t, "boom", d.Detail, "the first event's error stays")
		require.Equal(t, queue.AlertPending, d.State)
		claimed, err := b.s.ClaimAlertDeliveries(b.ctx, "n1", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		late := alertDelivery("k", 2)
		late.LateKey = "k+late"
		_, err = b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{late}})
		require.NoError(t, err)
		require.Equal(t, 1000, b.oneDelivery(t, "k").Count, "a delivery being sent is not changed")
		require.Equal(t, 2, b.oneDelivery(t, "k+late").Count)
		once := alertDelivery("k+late", 5)
		once.Once = true
		_, err = b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{once}})
		require.NoError(t, err)
		require.Equal(t, 2, b.oneDelivery(t, "k+late").Count, "Once never merges")
	},
	// A claim leases due deliveries to one node and counts the attempt;
	// only that attempt can end it; a retry is claimable when due, and a
	// delivery due later is not claimed before.
	"deliveries_are_leased_retried_and_ended": func(t *testing.T, h Harness) {
		b := setup(t, h)
		later := alertDelivery("later", 1)
		later.DueAt = time.Now().Add(time.Hour)
		_, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{alertDelivery("now", 1), later}})
		require.NoError(t, err)
		got, err := b.s.ClaimAlertDeliveries(b.ctx, "n1", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 1)
		d := got[0]
		require.Equal(t, "now", d.Key)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, "n1", d.ClaimedBy)
		again, err := b.s.ClaimAlertDeliveries(b.ctx, "n2", 10, time.Minute)
		require.NoError(t, err)
		require.Empty(t, again, "leased to n1")
		require.ErrorIs(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: d.ID, Node: "n2", Attempt: 1, Sent: true}), queue.ErrLeaseLost)
		require.NoError(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: d.ID, Node: "n1", Attempt: 1,
			Error: "connection refused", RetryAt: time.Now().Add(-time.Hour)}))
		pending := b.oneDelivery(t, "now")
		require.Equal(t, queue.AlertPending, pending.State)
		require.Equal(t, "connection refused", pending.LastError)
		got, err = b.s.ClaimAlertDeliveries(b.ctx, "n2", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 1, "the retry is due")
		require.Equal(t, 2, got[0].Attempts)
		require.ErrorIs(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: d.ID, Node: "n1", Attempt: 1, Sent: true}), queue.ErrLeaseLost,
			"an earlier attempt cannot end the current one")
		require.NoError(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: d.ID, Node: "n2", Attempt: 2, Sent: true}))
		sent := b.oneDelivery(t, "now")
		require.Equal(t, queue.AlertSent, sent.State)
		require.WithinDuration(t, time.Now(), sent.EndedAt, time.Minute)
		require.Equal(t, "connection refused", sent.LastError, "the failed attempt's error stays")
		require.ErrorIs(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: d.ID, Node: "n2", Attempt: 2, Sent: true}), queue.ErrLeaseLost,
			"a sent delivery stays sent")
		got, err = b.s.ClaimAlertDeliveries(b.ctx, "n1", 10, time.Minute)
		require.NoError(t, err)
		require.Empty(t, got, "nothing else is due")
		// A lease that runs out gives the delivery to another node.
		soon := alertDelivery("soon", 1)
		_, err = b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{soon}})
		require.NoError(t, err)
		got, err = b.s.ClaimAlertDeliveries(b.ctx, "n1", 10, time.Millisecond)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Eventually(t, func() bool {
			got, err = b.s.ClaimAlertDeliveries(b.ctx, "n2", 10, time.Minute)
			require.NoError(t, err)
			return len(got) == 1
		}, 30*time.Second, 20*time.Millisecond)
		require.NoError(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: got[0].ID, Node: "n2", Attempt: 2, GiveUp: true, Error: "410 Gone"}))
		require.Equal(t, queue.AlertFailed, b.oneDelivery(t, "soon").State)
	},
	// A condition starts once and recovers once, whoever races for it;
	// a change made already writes nothing.
	"conditions_change_once": func(t *testing.T, h Harness) {
		b := setup(t, h)
		fire := queue.AlertWrite{Condition: &queue.AlertConditionChange{Key: "stuck|etl", Firing: true, Detail: "waited 11m"},
			Deliveries: []queue.NewAlertDelivery{alertDelivery("stuck|etl|1", 1)}}
		ok, err := b.s.WriteAlerts(b.ctx, fire)
		require.NoError(t, err)
		require.True(t, ok)
		fire.Deliveries = []queue.NewAlertDelivery{alertDelivery("stuck|etl|2", 1)}
		ok, err = b.s.WriteAlerts(b.ctx, fire)
		require.NoError(t, err)
		require.False(t, ok, "firing already")
		conds, err := b.s.AlertConditions(b.ctx)
		require.NoError(t, err)
		require.Len(t, conds, 1)
		require.Equal(t, "stuck|etl", conds[0].Key)
		require.Equal(t, "waited 11m", conds[0].Detail)
		require.WithinDuration(t, time.Now(), conds[0].Since, time.Minute)
		all, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{})
		require.NoError(t, err)
		require.Len(t, all, 1, "the second firing added no delivery")
		clear := queue.AlertWrite{Condition: &queue.AlertConditionChange{Key: "stuck|etl"}}
		ok, err = b.s.WriteAlerts(b.ctx, clear)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = b.s.WriteAlerts(b.ctx, clear)
		require.NoError(t, err)
		require.False(t, ok)
		conds, err = b.s.AlertConditions(b.ctx)
		require.NoError(t, err)
		require.Empty(t, conds)
	},
	// Pages follow each other by id, filtered by state; a test sent by an
	// operator is audited; retention deletes ended deliveries and events
	// nobody took.
	"pages_audit_and_purge": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for i := range 5 {
			_, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{alertDelivery(fmt.Sprintf("k%d", i), 1)},
				Actor: "operator:ann", Action: "send_test_alert", AuditTarget: "operator ann", AuditDetail: "email"})
			require.NoError(t, err)
		}
		page, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{Limit: 2})
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, "k4", page[0].Key)
		next, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{Before: page[1].ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, next, 3)
		require.Equal(t, "k2", next[0].Key)
		_, err = b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{State: "bogus"})
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		audit, err := b.s.Audit(b.ctx, queue.AuditQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, audit, 5)
		require.Equal(t, "operator:ann send_test_alert operator ann email", audit[0].Actor+" "+audit[0].Action+" "+audit[0].Target+" "+audit[0].Detail)

		got, err := b.s.ClaimAlertDeliveries(b.ctx, "n1", 2, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 2)
		for _, d := range got {
			require.NoError(t, b.s.EndAlertDelivery(b.ctx, queue.AlertDeliveryEnd{ID: d.ID, Node: "n1", Attempt: 1, Sent: true}))
		}
		sent, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{State: queue.AlertSent})
		require.NoError(t, err)
		require.Len(t, sent, 2)
		b.enqueue(t, queue.NewTask{Queue: "etl", Body: "x", MaxAttempts: 1})
		b.finish(t, b.claim(t, "etl", 1)[0], queue.OutcomeFailed, "boom")
		n, err := b.s.PurgeAlerts(b.ctx, time.Now().Add(-time.Hour), 100)
		require.NoError(t, err)
		require.Zero(t, n, "nothing is that old")
		n, err = b.s.PurgeAlerts(b.ctx, time.Now().Add(time.Hour), 100)
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "the two sent deliveries and the event")
		left, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{})
		require.NoError(t, err)
		require.Len(t, left, 3, "pending deliveries stay")
	},
}

var alertReadTests = map[string]func(*testing.T, Harness){
	// Each unpaused queue's oldest pending task by enqueue order, with the
	// database's now; a paused queue and a queue with nothing pending are
	// left out.
	"oldest_pending_per_queue": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Queue: "etl", Body: "a"}, queue.NewTask{Queue: "etl", Body: "b"},
			queue.NewTask{Queue: "idle", Body: "c"}, queue.NewTask{Queue: "held", Body: "d"}, queue.NewTask{Queue: "later", Body: "e", Delay: time.Hour})
		b.finish(t, b.claim(t, "idle", 1)[0], queue.OutcomeSucceeded, "")
		paused := true
		_, err := b.s.UpdateQueue(b.ctx, "held", queue.QueueUpdate{Paused: &paused, Actor: "operator:ann"})
		require.NoError(t, err)
		got, err := b.s.OldestPending(b.ctx)
		require.NoError(t, err)
		require.Len(t, got, 2, "%+v", got)
		require.Equal(t, "etl", got[0].Queue)
		require.Equal(t, ids[0], got[0].TaskID)
		require.WithinDuration(t, time.Now(), got[0].Now, time.Minute)
		require.False(t, got[0].AvailableAt.After(got[0].Now))
		require.Equal(t, "later", got[1].Queue)
		require.True(t, got[1].AvailableAt.After(got[1].Now), "a delayed task is not waiting yet")
	},
}

var alertConcurrencyTests = map[string]func(*testing.T, Harness){
	// Claimers racing for events and for deliveries each get their own:
	// every row is handed out once.
	"claims_are_disjoint": func(t *testing.T, h Harness) {
		b := setup(t, h)
		tasks := make([]queue.NewTask, 40)
		for i := range tasks {
			tasks[i] = queue.NewTask{Queue: "etl", Body: "x", MaxAttempts: 1}
		}
		b.enqueue(t, tasks...)
		for _, task := range b.claim(t, "etl", 40) {
			b.finish(t, task, queue.OutcomeFailed, "boom")
		}
		var ds []queue.NewAlertDelivery
		for i := range 40 {
			ds = append(ds, alertDelivery(fmt.Sprintf("d%d", i), 1))
		}
		_, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: ds})
		require.NoError(t, err)
		race := func(claim func(node string) ([]int64, error)) map[int64]string {
			var mu sync.Mutex
			got := map[int64]string{}
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					node := fmt.Sprintf("n%d", w)
					for range 20 {
						ids, err := claim(node)
						require.NoError(t, err)
						mu.Lock()
						for _, id := range ids {
							require.Empty(t, got[id], "row %d handed to %s and %s", id, got[id], node)
							got[id] = node
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			return got
		}
		events := race(func(node string) ([]int64, error) {
			ev, err := b.s.ClaimAlertEvents(b.ctx, node, 3, time.Minute)
			out := make([]int64, len(ev))
			for i, e := range ev {
				out[i] = e.ID
			}
			return out, err
		})
		require.Len(t, events, 40)
		deliveries := race(func(node string) ([]int64, error) {
			d, err := b.s.ClaimAlertDeliveries(b.ctx, node, 3, time.Minute)
			out := make([]int64, len(d))
			for i, x := range d {
				out[i] = x.ID
			}
			return out, err
		})
		require.Len(t, deliveries, 40)
	},
	// Nodes digesting the same window at once merge into one delivery
	// counting every event, and nodes starting the same condition at once
	// notify once.
	"racing_adds_merge": func(t *testing.T, h Harness) {
		b := setup(t, h)
		var wg sync.WaitGroup
		var started sync.Map
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					_, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Deliveries: []queue.NewAlertDelivery{alertDelivery("window-1", 2)}})
					require.NoError(t, err)
				}
				ok, err := b.s.WriteAlerts(b.ctx, queue.AlertWrite{Condition: &queue.AlertConditionChange{Key: "node-silent|n9", Firing: true},
					Deliveries: []queue.NewAlertDelivery{alertDelivery(fmt.Sprintf("silent-%d", w), 1)}})
				require.NoError(t, err)
				if ok {
					started.Store(w, true)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 40, b.oneDelivery(t, "window-1").Count)
		n := 0
		started.Range(func(any, any) bool { n++; return true })
		require.Equal(t, 1, n, "one node started the condition")
		all, err := b.s.AlertDeliveries(b.ctx, queue.AlertDeliveryQuery{})
		require.NoError(t, err)
		require.Len(t, all, 2, "the digest and one notice of the condition")
	},
}
