package workers

import (
	"sync/atomic"
	"time"
)

// DrainStats accounts for the time of a node's worker slots while it drains,
// for `readpast bench` (docs/benchmarks/drain-idle.md): where a slot's time
// goes when it runs no body, and how large and slow the hot path's batches
// are. Config.Stats turns it on; a node without it counts nothing. Every
// figure is a sum over the node's pools, in nanoseconds where it is a time.
type DrainStats struct {
	// Slot time with no body and no task waiting for the slot, by what the
	// pool's producer was doing meanwhile: a claim in flight (the slot waits
	// for a claim), held back because maxEnding ends await their record (it
	// waits for the finisher), or neither (waiting for a wake-up or the poll,
	// or not yet scheduled).
	IdleClaiming, IdleEndingFull, IdleOther atomic.Int64
	// Slot time from the grant of a task to its body's start: the execution's
	// goroutine waiting to be scheduled.
	Scheduling atomic.Int64
	// Slot time in the body's run on the target: taking a connection, the
	// round trip, the session reset and giving the connection back.
	Body atomic.Int64
	// Slot time from the body's end to the slot's release.
	After atomic.Int64
	// Bodies run.
	Bodies atomic.Int64

	// Claims: round trips, tasks they returned, time they were in flight.
	Claims, ClaimedTasks, ClaimTime atomic.Int64
	// Finisher: batches written, ends they carried, time writing them, time
	// gathering ends before a write, and executions' time waiting to hand an
	// end over (a full queue of ends).
	FinishBatches, FinishEnds, FinishWrite, FinishGather, SubmitWait atomic.Int64
}

// slotClock integrates a pool's idle slots over time, by what its producer
// does meanwhile. The pool calls tick under its lock before every change of
// its slots or of the producer's state.
type slotClock struct {
	at                time.Time
	claiming, holding bool
}

// tickLocked charges the idle slots since the last tick and starts the next interval.
func (p *pool) tickLocked() {
	s := p.stats
	if s == nil {
		return
	}
	now := time.Now()
	c := &p.clock
	if !c.at.IsZero() && !p.stoppedLocked() && len(p.queued) == 0 {
		if idle := p.size - p.bodies; idle > 0 {
			d := int64(idle) * int64(now.Sub(c.at))
			switch {
			case c.claiming:
				s.IdleClaiming.Add(d)
			case c.holding:
				s.IdleEndingFull.Add(d)
			default:
				s.IdleOther.Add(d)
			}
		}
	}
	c.at = now
}
