package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"readpast/internal/queue"
)

// Config tunes a Scheduler; zero values take the defaults.
type Config struct {
	// Clock gives the time schedules are due at. Nil: the database's clock
	// (DueSchedules with a zero time), so nodes with skewed clocks agree on
	// when a fire time has come. Tests set a fixed clock.
	Clock func() time.Time
	// Poll is the longest sleep between looks at the schedules (default 1 s):
	// how soon a schedule created or changed on another node is seen. A node
	// sleeps until the next fire time when that is sooner.
	Poll time.Duration
	// MisfireGrace is how late a fire time may be and still run under
	// MisfireSkip (default DefaultMisfireGrace).
	MisfireGrace time.Duration
	// Batch is how many due schedules one look reads (default 100).
	Batch int
	// Enqueued, when set, is called with the queue of each task a fire
	// creates: a node passes its workers' Wake so they claim it at once.
	Enqueued func(queue string)
	// Resolve matches the selectors of a schedule that fans out to the
	// targets of the live nodes at its fire time. Nil: such a schedule's fires
	// fail (logged, tried again) on this node.
	Resolve Resolver
}

// Scheduler fires due schedules. Every node runs one, with no leader: the
// store makes each fire time one task however many schedulers race for it
// (ScheduleStore.FireSchedule). A look at the schedules reads only those due,
// by an index on the next fire time, and the soonest next fire time, so its
// cost does not grow with history or with the number of schedules waiting.
type Scheduler struct {
	store queue.ScheduleStore
	log   *slog.Logger
	cfg   Config
	wake  chan struct{}

	mu     sync.Mutex
	failed map[int64]int64 // schedule id -> the version whose failure was logged
}

// New returns a Scheduler; Run starts it.
func New(store queue.ScheduleStore, log *slog.Logger, cfg Config) *Scheduler {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.MisfireGrace <= 0 {
		cfg.MisfireGrace = DefaultMisfireGrace
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	return &Scheduler{store: store, log: log, cfg: cfg, wake: make(chan struct{}, 1), failed: map[int64]int64{}}
}

// Wake makes the scheduler look at the schedules now: call it after creating,
// changing or resuming one on this node.
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run fires due schedules until ctx ends, then returns nil. A store that
// cannot be reached is logged and tried again at the next look.
func (s *Scheduler) Run(ctx context.Context) error {
	s.log.Info("scheduler started", "poll", s.cfg.Poll, "misfire_grace", s.cfg.MisfireGrace)
	defer s.log.Info("scheduler stopped")
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-timer.C:
		}
		wait := s.cfg.Poll
		if p, err := s.FireDue(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("reading due schedules; trying again", "err", err, "in", wait)
		} else {
			wait = p.Wait
		}
		timer.Reset(wait)
	}
}

// Pass is what one look at the schedules did.
type Pass struct {
	Now   time.Time     // the time the schedules were due at
	Fired []queue.Fired // one per due schedule, in the order tried
	Wait  time.Duration // until the next look: the next fire time, at most Poll
}

// FireDue looks at the schedules once and fires those due. A fire that fails
// is logged (once per version of its schedule) and tried again at the next look.
func (s *Scheduler) FireDue(ctx context.Context) (Pass, error) {
	var at time.Time
	if s.cfg.Clock != nil {
		at = s.cfg.Clock()
	}
	due, err := s.store.DueSchedules(ctx, at, s.cfg.Batch)
	if err != nil {
		return Pass{}, err
	}
	p := Pass{Now: due.Now, Wait: s.cfg.Poll}
	soonest := due.Next
	// Nodes that wake together take the due schedules in different orders,
	// so they fire different ones instead of all racing for the first.
	rand.Shuffle(len(due.Due), func(i, j int) { due.Due[i], due.Due[j] = due.Due[j], due.Due[i] })
	for _, d := range due.Due {
		f, fired, err := s.fire(ctx, d, due.Now)
		if err != nil {
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			s.logFailure(d, err)
			continue
		}
		p.Fired = append(p.Fired, fired)
		if !f.Next.IsZero() && (soonest.IsZero() || f.Next.Before(soonest)) {
			soonest = f.Next
		}
	}
	switch {
	case len(due.Due) == s.cfg.Batch:
		p.Wait = 0 // more may be due
	case !soonest.IsZero():
		p.Wait = min(max(soonest.Sub(due.Now), 0), s.cfg.Poll)
	}
	return p, nil
}

// fire plans and makes one fire of d.
func (s *Scheduler) fire(ctx context.Context, d queue.DueSchedule, now time.Time) (queue.ScheduleFire, queue.Fired, error) {
	f, err := Plan(d, now, s.cfg.MisfireGrace)
	if err != nil {
		return f, queue.Fired{}, err
	}
	f.FanOut = s.fanOut(ctx, d, f.FireAt)
	if d.Job != "" {
		f.FanOut = jobFanOut(ctx, s.store, d.Job, s.cfg.Resolve)
	}
	fired, err := s.store.FireSchedule(ctx, f)
	if err != nil && d.Job != "" && f.FanOut != nil && f.FanOut.Err != nil {
		err = fmt.Errorf("%w (%v)", err, f.FanOut.Err)
	}
	if err != nil || !fired.Won {
		return f, fired, err
	}
	s.mu.Lock()
	delete(s.failed, d.ID)
	s.mu.Unlock()
	attrs := []any{"schedule", d.Name, "fire_time", f.FireAt, "outcome", fired.Outcome, "next", f.Next}
	if fired.TaskID != 0 {
		attrs = append(attrs, "task", fired.TaskID)
	}
	if f.FanOut != nil && fired.Outcome == queue.FireEnqueued {
		attrs = append(attrs, "fanout", f.FanOut.Group, "targets", len(f.FanOut.Targets))
	}
	if f.Missed > 0 {
		attrs = append(attrs, "missed", f.Missed)
	}
	s.log.Info("schedule fired", attrs...)
	if fired.Outcome == queue.FireEnqueued && s.cfg.Enqueued != nil {
		s.cfg.Enqueued(fired.Queue)
	}
	return f, fired, nil
}

// logFailure logs a failed fire once per version of its schedule: a schedule
// that cannot fire is tried at every look, but said only once.
func (s *Scheduler) logFailure(d queue.DueSchedule, err error) {
	s.mu.Lock()
	seen := s.failed[d.ID] == d.Version
	s.failed[d.ID] = d.Version
	s.mu.Unlock()
	if !seen {
		s.log.Error("firing a schedule failed; trying again at every look until it works or is changed", "schedule", d.Name, "err", err)
	}
}
