package queue

import (
	"fmt"
	"time"
)

// RetryPolicy is how long a task waits before a retry, instead of Backoff:
// a fixed Interval (Cap 0), or exponential from Interval, doubling with each
// retry, up to Cap. A task's own policy wins over its queue's; with neither,
// Backoff. A job step's retry interval is a fixed policy. The waits are
// exact (no jitter): a DBA who sets five minutes gets five minutes.
type RetryPolicy struct {
	Interval time.Duration
	Cap      time.Duration // 0: fixed; else exponential up to Cap
}

// MaxRetryWait bounds a policy's interval and cap.
const MaxRetryWait = 24 * time.Hour

// Wait is the wait before retry n (1 for the first).
func (p RetryPolicy) Wait(n int) time.Duration {
	if p.Cap <= 0 {
		return p.Interval
	}
	w := p.Interval
	for i := 1; i < n && w < p.Cap; i++ {
		w *= 2
	}
	return min(w, p.Cap)
}

// Describe renders the policy for the audit log and the API.
func (p RetryPolicy) Describe() string {
	if p.Cap <= 0 {
		return "fixed " + p.Interval.String()
	}
	return fmt.Sprintf("exponential from %s up to %s", p.Interval, p.Cap)
}

// CheckRetryPolicy refuses a policy whose interval or cap is out of range;
// field names the input ("retry").
func CheckRetryPolicy(field string, p RetryPolicy) error {
	switch {
	case p.Interval < time.Millisecond || p.Interval > MaxRetryWait:
		return &ValidationError{Field: field + "_interval", Reason: fmt.Sprintf("is %s: use 1ms to %s", p.Interval, MaxRetryWait)}
	case p.Cap != 0 && (p.Cap < p.Interval || p.Cap > MaxRetryWait):
		return &ValidationError{Field: field + "_cap", Reason: fmt.Sprintf("is %s: use the interval (%s) to %s, or none for a fixed interval", p.Cap, p.Interval, MaxRetryWait)}
	}
	return nil
}

// RetryWait is the wait before retry n of a task with its own policy (nil:
// none) on a queue with its policy (nil: none): the task's, else the
// queue's, else backoff (Backoff's). Every dialect follows it (PostgreSQL
// and SQL Server in SQL, written after this).
func RetryWait(n int, backoff time.Duration, task, q *RetryPolicy) time.Duration {
	switch {
	case task != nil:
		return task.Wait(n)
	case q != nil:
		return q.Wait(n)
	}
	return backoff
}

// retryMillis are a policy's two columns: retry_interval_ms and
// retry_cap_ms (NULL for a fixed interval), both NULL for none.
func RetryMillis(p *RetryPolicy) (interval, capMS *int64) {
	if p == nil {
		return nil, nil
	}
	i := p.Interval.Milliseconds()
	interval = &i
	if p.Cap > 0 {
		c := p.Cap.Milliseconds()
		capMS = &c
	}
	return interval, capMS
}

// RetryOf reads a policy back from its two columns.
func RetryOf(interval, capMS *int64) *RetryPolicy {
	if interval == nil {
		return nil
	}
	p := &RetryPolicy{Interval: time.Duration(*interval) * time.Millisecond}
	if capMS != nil {
		p.Cap = time.Duration(*capMS) * time.Millisecond
	}
	return p
}
