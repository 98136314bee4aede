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
	done    chan queue.FinishResult
}

// maxFinishBatch bounds one round trip.
const maxFinishBatch = 500

func newFinisher(n *Node) *finisher {
	return &finisher{n: n, in: make(chan finishRequest, maxFinishBatch)}
}

// record hands the attempt over and waits until it is written (or given up).
func (f *finisher) record(a queue.Attempt, release bool) queue.FinishResult {
	req := finishRequest{a: a, release: release, done: make(chan queue.FinishResult, 1)}
	f.in <- req
	return <-req.done
}

// run writes batches until ctx ends and nothing is left to write.
func (f *finisher) run(ctx context.Context) {
	for {
		var first finishRequest
		select {
		case first = <-f.in:
		case <-ctx.Done():
			return
		}
		batch := []finishRequest{first}
	more:
		for len(batch) < maxFinishBatch {
			select {
			case r := <-f.in:
				batch = append(batch, r)
			default:
				break more
			}
		}
		f.write(batch)
	}
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
				r.done <- res[i]
			}
			return
		}
		if queue.IsValidation(err) || time.Now().Add(wait).After(deadline) {
			f.n.log.Error("could not record finished attempts; their leases will expire and the tasks run again",
				"count", len(reqs), "err", err)
			for _, r := range reqs {
				r.done <- queue.FinishResult{TaskID: r.a.TaskID, Err: err}
			}
			return
		}
		f.n.log.Warn("recording finished attempts failed; retrying", "count", len(reqs), "retry_in", wait, "err", err)
		time.Sleep(wait)
	}
}
