// Package workers runs a pool of claim-loop workers per queue on this node
// (SPEC §5): claiming from the store, executing bodies on the target, keeping
// leases alive, following queue settings made on any node, and stopping
// gracefully.
package workers

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"readpast/internal/queue"
	"readpast/internal/target"
	"time"
)

// Config is a node's worker settings. Zero fields take the defaults.
type Config struct {
	NodeID  string // unique per process; default hostname-pid
	Version string // shown on the nodes page
	// DefaultWorkers is the pool size of a queue whose row sets none: nil
	// takes the default, 4; 0 runs none of them on this node, as a pause does
	// (`--workers 0` once ran 4: 0 was taken for unset).
	DefaultWorkers *int
	Poll           time.Duration // idle poll interval; default 1s
	Lease          time.Duration // lease length; default 30s; heartbeats every quarter of it
	Grace          time.Duration // how long a stop waits for running tasks; default 30s
	SettingsEvery  time.Duration // how often queue settings are re-read; default 1s
	ReclaimEvery   time.Duration // how often expired leases are looked for; default min(Lease/3, 10s)
	LogRetention   time.Duration // execution-log rows older than this are purged; 0 keeps them
	TaskRetention  time.Duration // finished tasks older than this are purged; 0 keeps them
	RetentionEvery time.Duration // how often the purge runs (and once at start); default 1h
	// AheadFor: behind a backlog a pool claims, besides its free slots, the
	// tasks its slots will start within this time by its bodies' average
	// run time, at most 32 per slot (docs/WORKERS.md, "Claiming ahead");
	// default 250ms.
	AheadFor time.Duration
	// AheadWait is how long a task claimed ahead waits for a worker before it
	// is given back to run elsewhere (docs/WORKERS.md, "Claiming ahead");
	// default 5s.
	AheadWait time.Duration
	// TargetIsStore says the target DSN is the store's, so transactional tasks can
	// commit their body and completion together.
	TargetIsStore bool
	// Targets are the node's named targets (docs/TARGETS.md); nil: the one
	// target given to New is the node's default (and the store, with
	// TargetIsStore), and the node serves no other.
	Targets *target.Set
	Logger  *slog.Logger
	// Observer, if set, hears of claims and finished attempts (metrics).
	Observer Observer
	// Stats, if set, accounts for the worker slots' time and the hot path's
	// batches (`readpast bench`).
	Stats *DrainStats
}

// DefaultNodeID is a node's name when none is given: hostname-pid, unique per
// process.
func DefaultNodeID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.NodeID == "" {
		c.NodeID = DefaultNodeID()
	}
	if c.DefaultWorkers == nil {
		four := 4
		c.DefaultWorkers = &four
	}
	if c.Poll == 0 {
		c.Poll = time.Second
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.Grace == 0 {
		c.Grace = 30 * time.Second
	}
	if c.SettingsEvery == 0 {
		c.SettingsEvery = time.Second
	}
	if c.ReclaimEvery == 0 {
		c.ReclaimEvery = min(c.Lease/3, 10*time.Second)
	}
	if c.RetentionEvery == 0 {
		c.RetentionEvery = time.Hour
	}
	if c.AheadFor == 0 {
		c.AheadFor = 250 * time.Millisecond
	}
	if c.AheadWait == 0 {
		c.AheadWait = 5 * time.Second
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case *c.DefaultWorkers < 0 || *c.DefaultWorkers > 1000:
		return c, fmt.Errorf("workers: default workers is %d: use 0 to 1000", *c.DefaultWorkers)
	case c.Poll < 10*time.Millisecond:
		return c, fmt.Errorf("workers: poll interval %s is below 10ms", c.Poll)
	case c.Lease < 300*time.Millisecond:
		return c, fmt.Errorf("workers: lease %s is below 300ms", c.Lease)
	case c.Grace < 0:
		return c, errors.New("workers: grace period is negative")
	case c.AheadFor < 0 || c.AheadWait < 0:
		return c, errors.New("workers: the time claimed ahead for, or a claimed task's wait, is negative")
	case c.LogRetention < 0 || c.TaskRetention < 0 || c.RetentionEvery < 0:
		return c, errors.New("workers: retention ages and interval cannot be negative")
	}
	return c, nil
}

// Observer hears what a node does, for metrics. Calls come from many goroutines
// and must not block.
type Observer interface {
	// Claimed: one claim round trip on queue q took d and returned n tasks (err set when it failed).
	Claimed(q string, n int, d time.Duration, err error)
	// Finished: an attempt on queue q ended with outcome o after running for d.
	Finished(q string, o queue.Outcome, d time.Duration)
	// Recorded: one write of the finisher, recording n ended attempts, took
	// d, retries included (err set when it gave up). A finish that waits on
	// another node's lock shows here, whatever the machine's load.
	Recorded(n int, d time.Duration, err error)
}

type nopObserver struct{}

func (nopObserver) Claimed(string, int, time.Duration, error)     {}
func (nopObserver) Finished(string, queue.Outcome, time.Duration) {}
func (nopObserver) Recorded(int, time.Duration, error)            {}

// heartbeatEvery is a quarter of the lease: the beats sent at a quarter and at
// half the lease may both fail before the fence stops the node's bodies at
// three quarters (fenceMargin), and each beat's call is bounded by it.
func (c Config) heartbeatEvery() time.Duration { return c.Lease / 4 }

// fenceMargin is how long before a lease can end in the store the node stops
// its body (fence.go): a quarter of the lease, 7.5 s of the default 30 s and
// 75 ms of the shortest lease allowed, for the cancel to reach the target and
// stop the statement. It leaves three heartbeats inside the lease's trusted
// part, lease - margin.
func (c Config) fenceMargin() time.Duration { return c.Lease / 4 }
