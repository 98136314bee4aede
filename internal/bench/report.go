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
	for _, b := range r.Backlog {
		fmt.Fprintf(tw, "claim behind a backlog\t%s: %d blocked, %d ready\tp50 %.2f ms\tp99 %.2f ms\t%.2f× none\n", b.Backlog, b.Blocked, b.Ready, b.P50, b.P99, b.P50VsNone)
	}
	if p := r.Purge; p != nil {
		fmt.Fprintf(tw, "purge while claiming\t%d finished tasks in %.1f s (%.0f rows/s)\tclaim p99 %.2f ms quiet, %.2f ms purging\t%.2f×\n",
			p.Finished, p.Seconds, p.RowsPerSec, p.P99Quiet, p.P99Purging, p.P99VsQuiet)
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(tw, "idle node\t%d queues for %.0f s\t%.2f queries/s\t%.2f per queue\n", i.Queues, i.Seconds, i.QueriesPerSec, i.PerQueuePerSec)
	}
}
