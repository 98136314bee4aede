package alerts

import (
	"context"
	"sort"
	"time"

	"readpast/internal/queue"
)

// kind is one rule kind, in one place: an event kind (matched against the
// outbox's events, delivered as digests) or a condition kind (found by a
// bounded read each check, notified when it starts and, with Recovery,
// when it ends). A new kind (job runs and steps, targets) is one entry
// here and, for an event kind, the store writing its event.
type kind struct {
	// event is the queue.AlertEvent kind the rule matches; "" for a
	// condition kind.
	event string
	// match says whether an event of the kind matches the rule's filters.
	match func(r Rule, e queue.AlertEvent) bool
	// conditions finds what is wrong now, by bounded reads.
	conditions     func(ctx context.Context, s queue.Store, r Rule, now time.Time) ([]condition, error)
	needsThreshold bool
	// summary words one match ("task 42 failed in queue etl"), plural a
	// digest ("1,000 tasks failed in queue etl").
	plural string
	doc    string
}

// condition is one subject of a condition rule that is wrong now.
type condition struct {
	Subject string // "queue etl": part of the condition's key
	Text    string // what is wrong, in one sentence
}

// kinds are the rule kinds.
var kinds = map[string]kind{
	"task_failed": {
		event:  queue.AlertEventTaskFailed,
		match:  matchTaskFailed,
		plural: "tasks failed",
		doc:    "a task ended failed, timed out or lost after its last attempt; filters: queues, schedules, jobs, targets, error_number, min_severity, sqlstate_class",
	},
	"queue_stuck": {
		conditions:     stuckQueues,
		needsThreshold: true,
		doc:            "a queue's oldest ready pending task has waited longer than threshold; filter: queues",
	},
	"node_silent": {
		conditions:     silentNodes,
		needsThreshold: true,
		doc:            "a node that did not stop has not heartbeated for threshold",
	},
	"task_long_running": {
		conditions:     longRunningTasks,
		needsThreshold: true,
		doc:            "a task has been running longer than threshold, or than median_factor × the median of its schedule's last runs; filters: queues, schedules",
	},
	"schedule_late": {
		conditions:     lateSchedules,
		needsThreshold: true,
		doc:            "a schedule's next fire time is more than threshold in the past: it stopped firing; filter: schedules",
	},
	"job_failed": {
		conditions: failedJobs,
		doc:        "a job's latest run ended failed (each failed run once; recovery when the next run starts); filter: jobs",
	},
	"job_long_running": {
		conditions:     longRunningJobs,
		needsThreshold: true,
		doc:            "a job's run has been running longer than threshold, or than median_factor × the median of its last successful runs; filter: jobs",
	},
	"target_unreachable": {
		conditions:     unreachableTargets,
		needsThreshold: true,
		doc:            "every live node that serves a target has failed to reach it for longer than threshold; filter: targets",
	},
	"schedule_skipped": {
		conditions: skippedSchedules,
		doc:        "a schedule's latest fire time was skipped (overlap, misfire); filter: schedules",
	},
}

// isEvent reports whether the rule matches events.
func (k kind) isEvent() bool { return k.event != "" }

// KindNames lists the rule kinds.
func KindNames() []string {
	var out []string
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// KindDoc says what a rule kind notifies of.
func KindDoc(name string) string { return kinds[name].doc }
