package ui

import (
	"strconv"
	"strings"

	"readpast/internal/queue"
	"readpast/web/templates"
)

// Live fields are small texts on a page that the websocket keeps current: an
// element carrying data-live="<key>" gets the field's text, one carrying
// data-live-flag="<key>" is shown when the field is "true".

func totalKey(st queue.State) string           { return "total:" + string(st) }
func countKey(q string, st queue.State) string { return "count:" + q + ":" + string(st) }
func busyKey(q string) string                  { return "busy:" + q }
func sizeKey(q string) string                  { return "size:" + q }
func pausedKey(q string) string                { return "paused:" + q }

// queueSetKey's value names every queue, one per line, in the overview's
// order: a page whose table lists other queues reloads itself to show them.
const queueSetKey = "queues"

func queueSet(names []string) string { return strings.Join(names, "\n") }

// liveFields computes every field from the queues and their workers.
func liveFields(qs []queue.Queue, pools map[string]poolTotals) map[string]string {
	f := make(map[string]string, len(qs)*8+4)
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	f[queueSetKey] = queueSet(names)
	for _, t := range totals(qs) {
		f[t.Key] = templates.FormatCount(t.Count)
	}
	for _, q := range qs {
		for _, st := range queue.States {
			f[countKey(q.Name, st)] = templates.FormatCount(q.Counts[st])
		}
		p := pools[q.Name]
		f[busyKey(q.Name)] = strconv.Itoa(p.Busy)
		f[sizeKey(q.Name)] = strconv.Itoa(p.Size)
		f[pausedKey(q.Name)] = strconv.FormatBool(q.Paused)
	}
	return f
}
