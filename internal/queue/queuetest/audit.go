package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var auditTests = map[string]func(*testing.T, Harness){
	// Every operator's change writes a row in its own transaction (who, what,
	// which object, when), and Audit reads them back newest first.
	"every_change_is_read_back": func(t *testing.T, h Harness) {
		b := setup(t, h)
		ids := b.enqueue(t, queue.NewTask{Queue: "etl", Body: "SELECT 1", Delay: time.Hour})
		paused := true
		_, err := b.s.UpdateQueue(b.ctx, "etl", queue.QueueUpdate{Paused: &paused, Actor: "operator:ann"})
		require.NoError(t, err)
		require.NoError(t, b.s.SetGroupLimit(b.ctx, "nightly", 3, "operator:bob"))
		_, err = b.s.Cancel(b.ctx, ids[0], "operator:ann")
		require.NoError(t, err)
		require.NoError(t, b.s.Retry(b.ctx, ids[0], "operator:bob"))
		_, err = b.ed.CreateSchedule(b.ctx, queue.ScheduleDef{Name: "s1", Cron: "@daily", Task: queue.ScheduleTask{Body: "SELECT 1"}}, "operator:cy")
		require.NoError(t, err)

		rows, err := b.s.Audit(b.ctx, queue.AuditQuery{})
		require.NoError(t, err)
		var got []string
		for i, r := range rows {
			got = append(got, r.Actor+" "+r.Action+" "+r.Target)
			require.WithinDuration(t, time.Now(), r.At, time.Minute, "at is when the change was made")
			require.Equal(t, time.UTC, r.At.Location())
			if i > 0 {
				require.Less(t, r.ID, rows[i-1].ID, "newest first")
			}
		}
		task := fmt.Sprintf("task %d", ids[0])
		require.Equal(t, []string{
			"operator:cy create_schedule schedule s1",
			"operator:bob retry " + task,
			"operator:ann cancel " + task,
			"operator:bob set_group_limit group nightly",
			"operator:ann update_queue queue etl",
		}, got)
		require.Equal(t, "3", rows[1+2].Detail, "the group's new limit is the detail")
	},
	// Pages follow each other by the id cursor with nothing skipped or
	// repeated; a page past the oldest row is empty; a bad limit is refused.
	"keyset_pages": func(t *testing.T, h Harness) {
		b := setup(t, h)
		for i := range 7 {
			require.NoError(t, b.s.SetGroupLimit(b.ctx, fmt.Sprintf("g%d", i), i+1, "operator:ann"))
		}
		all, err := b.s.Audit(b.ctx, queue.AuditQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, all, 7)
		var paged []int64
		q := queue.AuditQuery{Limit: 3}
		for {
			page, err := b.s.Audit(b.ctx, q)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 3)
			for _, r := range page {
				paged = append(paged, r.ID)
			}
			if len(page) < 3 {
				break
			}
			q.Before = page[len(page)-1].ID
		}
		var want []int64
		for _, r := range all {
			want = append(want, r.ID)
		}
		require.Equal(t, want, paged, "the pages together are the log, in order")
		past, err := b.s.Audit(b.ctx, queue.AuditQuery{Before: all[len(all)-1].ID})
		require.NoError(t, err)
		require.Empty(t, past)
		for _, bad := range []queue.AuditQuery{{Limit: -1}, {Limit: queue.MaxAuditPage + 1}, {Before: -5}} {
			_, err := b.s.Audit(b.ctx, bad)
			require.True(t, queue.IsValidation(err), "%+v is refused: %v", bad, err)
		}
	},
}
