package workers

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"readpast/internal/queue"
)

// finisher records finished attempts for every worker of the node in batches:
// one store round trip and one commit for all attempts that ended while the
// previous batch was being written, instead of one per task. Under load that
// is what moves throughput past a commit per task (River batches completions
// the same way); when idle a batch is a single attempt and adds no delay.
//
// Once a batch is written (or given up) the finisher tells each pool which of
// its leases ended (endsReceiver.written: one call per pool per batch, which
// never blocks), so the pool forgets them and may claim again. A pool busy in
// a long claim therefore never holds up the ends of every other queue.
type finisher struct {
	lifecycle
	store     Store
	oneWriter bool // the store writes one transaction at a time (SQLite)
	batchMax  int  // the most attempts one write carries: the store's FinishBatch, or defaultFinishBatch
	lease     time.Duration
	observer  Observer
	log       *slog.Logger
	in        chan finishRequest
	stats     *DrainStats // nil: not counted
}

type finishRequest struct {
	a       queue.Attempt
	release bool
	to      endsReceiver // the pool's, told once the attempt is written or given up
}

// endsReceiver is told which of its leases the finisher wrote (or gave up).
// written must not block: the node's one finisher calls it for every pool.
type endsReceiver interface {
	written(leases []queue.Lease)
}

const (
	// defaultFinishBatch bounds one round trip unless the store gives its
	// own bound (queue.Capabilities.FinishBatch).
	defaultFinishBatch = 500
	// Once a batch held finishBusy ends or more, the next one gathers ends
	// for finishGather after its first before it is written: under load a
	// write then records hundreds of ends instead of dozens, and the fixed
	// cost of a call and its commit is spread over them (River's completer
	// gathers for 50 ms). An idle node writes each end at once.
	finishBusy   = 16
	finishGather = 5 * time.Millisecond
)

func newFinisher(store Store, lease time.Duration, observer Observer, log *slog.Logger) *finisher {
	caps := store.Capabilities()
	batchMax := cmp.Or(caps.FinishBatch, defaultFinishBatch)
	return &finisher{store: store, oneWriter: !caps.ConcurrentWriters, batchMax: batchMax, lease: lease, observer: observer,
		log: log, in: make(chan finishRequest, batchMax)}
}

// maxEnding is how many of a pool's ended tasks may await their record before
// the pool claims nothing more: two full batches, one being written and one
// gathering, so a slow store does not pile up leases.
func (f *finisher) maxEnding() int { return 2 * f.batchMax }

// submit hands the attempt over; to is told its lease once it is written (or
// given up). It waits only while a full batch of attempts is queued.
func (f *finisher) submit(a queue.Attempt, release bool, to endsReceiver) {
	r := finishRequest{a: a, release: release, to: to}
	if f.stats == nil {
		f.in <- r
		return
	}
	select {
	case f.in <- r:
	default:
		began := time.Now()
		f.in <- r
		f.stats.SubmitWait.Add(int64(time.Since(began)))
	}
}

// Start writes batches until ctx ends or Stop, then writes what is still
// queued: the node stops it only after every execution has submitted its end.
func (f *finisher) Start(ctx context.Context) { f.start(ctx, f.run) }

func (f *finisher) run(ctx context.Context) {
	batch := make([]finishRequest, 0, f.batchMax)
	busy := false // the last batch was large: ends come faster than one a write
	for {
		batch = batch[:0]
		select {
		case r := <-f.in:
			batch = append(batch, r)
		case <-ctx.Done():
			for {
				batch = f.take(batch[:0])
				if len(batch) == 0 {
					return
				}
				f.write(batch)
			}
		}
		gathered := time.Now()
		if busy {
			batch = f.gather(batch, gathered.Add(finishGather))
		}
		batch = f.take(batch)
		busy = len(batch) >= finishBusy
		written := time.Now()
		f.write(batch)
		if f.stats != nil {
			f.stats.FinishBatches.Add(1)
			f.stats.FinishEnds.Add(int64(len(batch)))
			f.stats.FinishGather.Add(int64(written.Sub(gathered)))
			f.stats.FinishWrite.Add(int64(time.Since(written)))
		}
	}
}

// gather waits until deadline for more ends, up to a batch.
func (f *finisher) gather(batch []finishRequest, deadline time.Time) []finishRequest {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for len(batch) < f.batchMax {
		select {
		case r := <-f.in:
			batch = append(batch, r)
		case <-t.C:
			return batch
		}
	}
	return batch
}

// take appends what is queued now, up to a batch.
func (f *finisher) take(batch []finishRequest) []finishRequest {
	for len(batch) < f.batchMax {
		select {
		case r := <-f.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// write records one batch, finishes and releases separately, then tells the
// pools what ended.
func (f *finisher) write(batch []finishRequest) {
	var fin, rel []finishRequest
	for _, r := range batch {
		if r.release {
			rel = append(rel, r)
		} else {
			fin = append(fin, r)
		}
	}
	f.writeSome(fin, f.store.Finish)
	f.writeSome(rel, f.store.Release)
	ends := map[endsReceiver][]queue.Lease{}
	for _, r := range batch {
		ends[r.to] = append(ends[r.to], r.a.Lease)
	}
	for to, leases := range ends {
		to.written(leases)
	}
}

// writeSome records attempts in one call, retrying while the store is
// unreachable for up to one lease: after that the leases have expired anyway
// and another node reclaims the tasks, so nothing is lost or left running.
//
// A store with one writer (SQLite) that makes the call wait its whole timeout
// is not unreachable: a transactional body holds the writer, and lease time
// stops while it does (the body extends every running lease by as long as it
// held the writer), so such waits do not count and the call is made again at
// once. Counting them gave up the ends of tasks that ran to completion on a
// live node while a transactional body longer than the lease ran beside
// them, and their leases, still live, ran out later as lost attempts.
func (f *finisher) writeSome(reqs []finishRequest, call func(context.Context, []queue.Attempt) ([]queue.FinishResult, error)) {
	if len(reqs) == 0 {
		return
	}
	attempts := make([]queue.Attempt, len(reqs))
	for i, r := range reqs {
		attempts[i] = r.a
	}
	began := time.Now()
	deadline := began.Add(f.lease)
	waited := false
	for wait := 100 * time.Millisecond; ; {
		ctx, cancel := context.WithTimeout(context.Background(), f.lease/3)
		res, err := call(ctx, attempts)
		cancel()
		switch {
		case err == nil:
			f.observer.Recorded(len(reqs), time.Since(began), nil)
			for _, r := range res {
				logEnd(f.log, r, r.Err)
			}
			return
		case f.oneWriter && errors.Is(err, context.DeadlineExceeded):
			if !waited {
				f.log.Info("recording finished attempts waits for the writer (a transactional task holds it)", "count", len(reqs))
				waited = true
			}
			deadline = time.Now().Add(f.lease)
			continue
		case queue.IsValidation(err) || time.Now().Add(wait).After(deadline):
			f.log.Error("could not record finished attempts; their leases will expire and the tasks run again",
				"count", len(reqs), "err", err)
			f.observer.Recorded(len(reqs), time.Since(began), err)
			for _, r := range reqs {
				logEnd(f.log, queue.FinishResult{TaskID: r.a.TaskID}, err)
			}
			return
		}
		f.log.Warn("recording finished attempts failed; retrying", "count", len(reqs), "retry_in", wait, "err", err)
		time.Sleep(wait)
		wait = min(wait*2, 5*time.Second)
	}
}

// logEnd says what became of a recorded attempt.
func logEnd(log *slog.Logger, res queue.FinishResult, err error) {
	switch {
	case errors.Is(err, queue.ErrLeaseLost):
		log.Warn("attempt not recorded: the lease was lost", "task", res.TaskID)
	case err != nil:
		log.Warn("attempt not recorded", "task", res.TaskID, "err", err)
	default:
		log.Debug("attempt recorded", "task", res.TaskID, "state", res.State)
	}
}
