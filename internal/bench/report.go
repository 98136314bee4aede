package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints the report for people; the JSON form is for machines.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "dialect\t%s\n", r.Dialect)
	if t := r.Throughput; t != nil {
		fmt.Fprintf(tw, "throughput\t%d no-op tasks, %d node(s) × %d workers\n", t.Tasks, t.Nodes, t.Workers)
		fmt.Fprintf(tw, "  enqueue\t%.0f tasks/s (batches of 1000)\n", t.EnqueuePerSec)
		fmt.Fprintf(tw, "  end to end\t%.0f tasks/s (drained in %.2f s)\n", t.EndToEndPerSec, t.DrainSeconds)
		if t.WriteTxPerTask > 0 {
			fmt.Fprintf(tw, "  write transactions per task\t%.3f\n", t.WriteTxPerTask)
		}
		if t.ServerCPUPerTaskUS > 0 {
			fmt.Fprintf(tw, "  server CPU per task\t%.1f µs\n", t.ServerCPUPerTaskUS)
		}
		fmt.Fprintf(tw, "  node CPU per task\t%.1f µs\n", t.NodeCPUPerTaskUS)
		fmt.Fprintf(tw, "  peak RSS\t%.0f MB\n", t.PeakRSSMB)
		fmt.Fprintf(tw, "  batches\t%.1f tasks a claim, %.1f attempts a finish\n", t.TasksPerClaim, t.AttemptsPerFinish)
		if s := t.Slots; s != nil {
			pc := func(f float64) float64 { return 100 * f }
			fmt.Fprintf(tw, "  worker slots' time\tbody %.1f %% (connection %.1f %%), scheduling %.1f %%, after %.1f %%\n",
				pc(s.Body), pc(s.ConnWait), pc(s.Scheduling), pc(s.After))
			fmt.Fprintf(tw, "  slots idle\tclaim in flight %.1f %%, ends awaiting the finisher %.1f %%, other %.1f %%\n",
				pc(s.IdleClaiming), pc(s.IdleEndingFull), pc(s.IdleOther))
			fmt.Fprintf(tw, "  round trips\tbody %.2f ms, claim %.2f ms, finish write %.2f ms (gather %.2f ms), end handed over %.1f µs\n",
				s.BodyMS, s.ClaimMS, s.FinishWriteMS, s.FinishGatherMS, s.SubmitWaitUS)
		}
		if l := t.Limit; l != nil {
			fmt.Fprintf(tw, "  limit: body and reset, no queue\t%.0f /s on %d connections", l.BodyPerSec, t.Workers)
			if l.BodyServerCPUPerRun > 0 {
				fmt.Fprintf(tw, " (server CPU %.1f µs each)", l.BodyServerCPUPerRun)
			}
			fmt.Fprintf(tw, "\tend to end is %.0f %% of it\n", 100*t.OfBodyLimit)
			fmt.Fprintf(tw, "  the same, batches marked per task\t%.0f /s", l.NamedPerSec)
			if l.NamedServerCPUPerRun > 0 {
				fmt.Fprintf(tw, " (server CPU %.1f µs each)", l.NamedServerCPUPerRun)
			}
			fmt.Fprintf(tw, "\tend to end is %.0f %% of it\n", 100*t.EndToEndPerSec/l.NamedPerSec)
			if l.OneConnPerSec > 0 {
				fmt.Fprintf(tw, "  limit: one connection's SELECT 1 loop\t%.0f /s\tend to end is %.0f %% of it\n", l.OneConnPerSec, 100*t.OfOneConnSQL)
			}
		}
	}
	if l := r.Latency; l != nil {
		fmt.Fprintf(tw, "latency\t%d tasks at %.0f/s, idle node, poll %.0f s\n", l.Tasks, l.RatePerSec, l.PollSeconds)
		fmt.Fprintf(tw, "  enqueue→start\tp50 %.2f ms\tp95 %.2f ms\tp99 %.2f ms\n", l.StartP50, l.StartP95, l.StartP99)
		fmt.Fprintf(tw, "  enqueue→finish\tp50 %.2f ms\tp95 %.2f ms\tp99 %.2f ms\n", l.FinishP50, l.FinishP95, l.FinishP99)
	}
	for _, d := range r.Depth {
		fmt.Fprintf(tw, "claim (batch 1)\t%d pending, %d finished\tp50 %.2f ms\tp99 %.2f ms\n", d.Pending, d.Finished, d.P50, d.P99)
	}
	for _, b := range r.Backlog {
		fmt.Fprintf(tw, "claim behind a backlog\t%s: %d blocked, %d ready\tp50 %.2f ms\tp99 %.2f ms\t%.2f× none\n", b.Backlog, b.Blocked, b.Ready, b.P50, b.P99, b.P50VsNone)
	}
	if p := r.Purge; p != nil {
		fmt.Fprintf(tw, "purge while claiming\t%d finished tasks, %d rows with their log, in %.1f s (%.0f rows/s)\tclaim p99 %.2f ms quiet, %.2f ms purging\t%.2f×\n",
			p.Finished, p.Rows, p.Seconds, p.RowsPerSec, p.P99Quiet, p.P99Purging, p.P99VsQuiet)
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(tw, "idle node\t%d queues for %.0f s\t%.2f queries/s\t%.2f per queue\n", i.Queues, i.Seconds, i.QueriesPerSec, i.PerQueuePerSec)
	}
	r.writeHistory(tw)
}

// writeHistory prints one line per request and size, then the worst ratio at
// each size; the goal (SPEC §9) is judged at the largest.
func (r *Report) writeHistory(w io.Writer) {
	if len(r.History) == 0 {
		return
	}
	var sizes []int64
	worst := map[int64]HistoryResult{}
	for _, h := range r.History {
		fmt.Fprintf(w, "history\t%d finished\t%s %s\tp50 %.2f ms\tp99 %.2f ms\t× %.2f / %.2f",
			h.Finished, h.Kind, h.Request, h.P50, h.P99, h.P50Ratio, h.P99Ratio)
		if h.Error != "" {
			fmt.Fprintf(w, "\tfailed: %s", h.Error)
		}
		fmt.Fprintln(w)
		if _, ok := worst[h.Finished]; !ok {
			sizes = append(sizes, h.Finished)
		}
		if cur, ok := worst[h.Finished]; !ok || h.P50Ratio > cur.P50Ratio {
			worst[h.Finished] = h
		}
	}
	for _, n := range sizes {
		h := worst[n]
		fmt.Fprintf(w, "history worst\t%d finished\t%s %s\t× %.2f\n", n, h.Kind, h.Request, h.P50Ratio)
	}
	h := worst[sizes[len(sizes)-1]]
	verdict := "met"
	for _, x := range r.History {
		if x.Finished == h.Finished && x.Error != "" {
			verdict = "not met: " + x.Kind + " " + x.Request + " failed"
		}
	}
	if h.P50Ratio > historyGoal {
		verdict = "not met"
	}
	fmt.Fprintf(w, "history goal\tp50 at %d finished ≤ %.1f × without history: %s\n", h.Finished, historyGoal, verdict)
}
