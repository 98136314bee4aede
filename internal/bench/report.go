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
	}
	if l := r.Latency; l != nil {
		fmt.Fprintf(tw, "latency\t%d tasks at %.0f/s, idle node, poll %.0f s\n", l.Tasks, l.RatePerSec, l.PollSeconds)
		fmt.Fprintf(tw, "  enqueue→start\tp50 %.2f ms\tp95 %.2f ms\tp99 %.2f ms\n", l.StartP50, l.StartP95, l.StartP99)
		fmt.Fprintf(tw, "  enqueue→finish\tp50 %.2f ms\tp95 %.2f ms\tp99 %.2f ms\n", l.FinishP50, l.FinishP95, l.FinishP99)
	}
	for _, d := range r.Depth {
		fmt.Fprintf(tw, "claim (batch 1)\t%d pending, %d finished\tp50 %.2f ms\tp99 %.2f ms\n", d.Pending, d.Finished, d.P50, d.P99)
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(tw, "idle node\t%d queues for %.0f s\t%.2f queries/s\t%.2f per queue\n", i.Queues, i.Seconds, i.QueriesPerSec, i.PerQueuePerSec)
	}
	r.writeHistory(tw)
}

// writeHistory prints one line per request and size, and whether every
// request's p50 stayed within the goal.
func (r *Report) writeHistory(w io.Writer) {
	if len(r.History) == 0 {
		return
	}
	worst := r.History[0]
	for _, h := range r.History {
		fmt.Fprintf(w, "history\t%d finished\t%s %s\tp50 %.2f ms\tp99 %.2f ms\t× %.2f / %.2f\n",
			h.Finished, h.Kind, h.Request, h.P50, h.P99, h.P50Ratio, h.P99Ratio)
		if h.P50Ratio > worst.P50Ratio {
			worst = h
		}
	}
	verdict := "met"
	if worst.P50Ratio > historyGoal {
		verdict = "not met"
	}
	fmt.Fprintf(w, "history goal\tp50 ≤ %.1f × without history: %s (worst %s %s, × %.2f at %d finished)\n",
		historyGoal, verdict, worst.Kind, worst.Request, worst.P50Ratio, worst.Finished)
}
