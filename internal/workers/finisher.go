package workers

import (
	"context"
	"time"

	"readpast/internal/queue"
)

// finisher records finished attempts for every worker of the node in batches:
// one store round trip and one commit for all attempts that ended while the
// previous batch was being written, instead of one per task. Under load that
// is what moves throughput past a commit per task (River batches completions
// the same way); when idle a batch is a single attempt and adds no delay.
type finisher struct {
	n  *Node
	in chan finishRequest
}

type finishRequest struct {
	a       queue.Attempt
	release bool
	done    func(queue.FinishResult) // called from the finisher's goroutine once written
}

// maxFinishBatch bounds one round trip.
const maxFinishBatch = 500

func newFinisher(n *Node) *finisher {
	return &finisher{n: n, in: make(chan finishRequest, maxFinishBatch)}
}

// submit hands the attempt over; done is called with the result once it is
// written (or given up). It waits only while maxFinishBatch attempts are queued.
func (f *finisher) submit(a queue.Attempt, release bool, done func(queue.FinishResult)) {
	f.in <- finishRequest{a: a, release: release, done: done}
}

// run writes batches until ctx ends, then writes what is still queued: the node
// stops it only after every execution has submitted its end.
func (f *finisher) run(ctx context.Context) {
	batch := make([]finishRequest, 0, maxFinishBatch)
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
		f.write(f.take(batch))
	}
}

// take appends what is queued now, up to a batch.
func (f *finisher) take(batch []finishRequest) []finishRequest {
	for len(batch) < maxFinishBatch {
		select {
		case r := <-f.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// write records one batch, finishes and releases separately, retrying while the
// store is unreachable for up to one lease: after that the leases have expired
// anyway and another node reclaims the tasks, so nothing is lost or left running.
func (f *finisher) write(batch []finishRequest) {
	var fin, rel []finishRequest
	for _, r := range batch {
		if r.release {
			rel = append(rel, r)
		} else {
			fin = append(fin, r)
		}
	}
	f.writeSome(fin, f.n.store.Finish)
	f.writeSome(rel, f.n.store.Release)
}

func (f *finisher) writeSome(reqs []finishRequest, call func(context.Context, []queue.Attempt) ([]queue.FinishResult, error)) {
	if len(reqs) == 0 {
		return
	}
	attempts := make([]queue.Attempt, len(reqs))
	for i, r := range reqs {
		attempts[i] = r.a
	}
	deadline := time.Now().Add(f.n.cfg.Lease)
	for wait := 100 * time.Millisecond; ; wait = min(wait*2, 5*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), f.n.cfg.heartbeatEvery())
		res, err := call(ctx, attempts)
		cancel()
		if err == nil {
			for i, r := range reqs {
				r.done(res[i])
			}
			return
		}
		if queue.IsValidation(err) || time.Now().Add(wait).After(deadline) {
			f.n.log.Error("could not record finished attempts; their leases will expire and the tasks run again",
				"count", len(reqs), "err", err)
			for _, r := range reqs {
				r.done(queue.FinishResult{TaskID: r.a.TaskID, Err: err})
			}
			return
		}
		f.n.log.Warn("recording finished attempts failed; retrying", "count", len(reqs), "retry_in", wait, "err", err)
		time.Sleep(wait)
	}
}
