package bench

import (
	"time"

	"readpast/internal/target"
	"readpast/internal/workers"
)

// SlotTimes says where the worker slots' time went while draining, as shares
// of the slots' time (workers × nodes × the drain), and how large and slow
// the hot path's batches were (docs/benchmarks/drain-idle.md).
type SlotTimes struct {
	// Running a body on the target (ConnWait of it: taking a connection).
	Body     float64 `json:"body"`
	ConnWait float64 `json:"conn_wait"`
	// From a task's grant to its body's start (the goroutine's scheduling),
	// and from the body's end to the slot's release.
	Scheduling float64 `json:"scheduling"`
	After      float64 `json:"after"`
	// No body and no task claimed ahead for the slot: while a claim was in
	// flight, while the pool was held back by ends awaiting their record, and
	// otherwise (waiting for a wake-up, or the drain's start and end).
	IdleClaiming   float64 `json:"idle_claiming"`
	IdleEndingFull float64 `json:"idle_ending_full"`
	IdleOther      float64 `json:"idle_other"`
	// Mean body time, claim and finish round trips, in milliseconds.
	BodyMS, ClaimMS, FinishWriteMS, FinishGatherMS float64
	// Time executions waited to hand an end to the finisher, per body, in µs.
	SubmitWaitUS float64
	// Tasks per claim and ends per finish batch, as the nodes saw them.
	TasksPerClaim, EndsPerFinish float64
}

// slotTimes turns a drain's counters into shares of total, the slots' time;
// connWait is the target's time taking connections during the drain.
func slotTimes(s *workers.DrainStats, total, connWait time.Duration) *SlotTimes {
	share := func(ns int64) float64 { return float64(ns) / float64(total) }
	ms := func(ns, n int64) float64 { return float64(ns) / float64(max(n, 1)) / 1e6 }
	bodies := s.Bodies.Load()
	return &SlotTimes{
		Body:           share(s.Body.Load()),
		ConnWait:       share(int64(connWait)),
		Scheduling:     share(s.Scheduling.Load()),
		After:          share(s.After.Load()),
		IdleClaiming:   share(s.IdleClaiming.Load()),
		IdleEndingFull: share(s.IdleEndingFull.Load()),
		IdleOther:      share(s.IdleOther.Load()),
		BodyMS:         ms(s.Body.Load(), bodies),
		ClaimMS:        ms(s.ClaimTime.Load(), s.Claims.Load()),
		FinishWriteMS:  ms(s.FinishWrite.Load(), s.FinishBatches.Load()),
		FinishGatherMS: ms(s.FinishGather.Load(), s.FinishBatches.Load()),
		SubmitWaitUS:   ms(s.SubmitWait.Load(), bodies) * 1000,
		TasksPerClaim:  ratio(s.ClaimedTasks.Load(), s.Claims.Load()),
		EndsPerFinish:  ratio(s.FinishEnds.Load(), s.FinishBatches.Load()),
	}
}

// connWait reads the target's total time taking connections, 0 for a target
// that does not count it.
func connWait(t target.Target) time.Duration {
	if w, ok := t.(target.ConnWaiter); ok {
		return w.ConnWait()
	}
	return 0
}
