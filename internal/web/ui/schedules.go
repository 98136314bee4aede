package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/web/templates"
)

// schedules lists every schedule with its next fire times and latest run.
func (u *Pages) schedules(c echo.Context) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	rows, err := u.scheduleRows(ctx, auth.Can(c, auth.Operator))
	if err != nil {
		return err
	}
	v := templates.Schedules{Page: u.page(c, "schedules", "Schedules", templates.Live{View: "schedules"}, nil), Rows: rows}
	return render(c, http.StatusOK, templates.SchedulesPage(v))
}

// scheduleRows reads the schedules and lays them out; the live hub repeats
// it. One query, one row per schedule, its latest run read by id: the cost
// grows with the number of schedules, never with their history. The fire
// times are computed here, not read.
func (u *views) scheduleRows(ctx context.Context, operate bool) ([]templates.ScheduleRow, error) {
	list, err := u.store.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	now := u.now()
	rows := make([]templates.ScheduleRow, len(list))
	for i := range list {
		rows[i] = scheduleRow(&list[i], now, operate)
	}
	return rows, nil
}

// scheduleRow turns a schedule into its row; operate adds the buttons.
func scheduleRow(s *queue.Schedule, now time.Time, operate bool) templates.ScheduleRow {
	r := templates.ScheduleRow{ID: s.ID, Name: s.Name, Cron: s.Cron, Zone: s.TimeZone, Paused: s.Paused,
		Overlap: overlapText(s.Overlap), Misfire: misfireText(s.Misfire), Queue: s.Task.Queue,
		Body: firstLine(s.Task.Body, 200), BodyFull: s.Task.Body, TasksURL: withQuery("/tasks", "schedule", s.Name),
		Next: showFireTimes(ops.UpcomingFires(s, ops.UpcomingShown)), LastFire: lastFire(s), Where: scheduleWhere(s.Task)}
	if s.LastTaskID != 0 {
		r.LastRun = &templates.ScheduleRun{TaskID: s.LastTaskID, URL: taskURL(s.LastTaskID), State: string(s.LastTaskState),
			Finished: showTime(s.LastTaskFinishedAt, now)}
	}
	if operate {
		base := scheduleURL(s.Name)
		r.Actions = []templates.Action{{Label: "Run now", URL: base + "/run", Class: "run", Return: "/schedules"}}
		if s.Paused {
			r.Actions = append(r.Actions, templates.Action{Label: "Resume", URL: base + "/resume", Class: "resume", Return: "/schedules"})
		} else {
			r.Actions = append(r.Actions, templates.Action{Label: "Pause", URL: base + "/pause", Class: "pause", Return: "/schedules"})
		}
		r.EditURL, r.DeleteURL = base+"/edit", base+"/delete"
	}
	return r
}

// scheduleWhere says where a schedule's runs go: its target, or the targets
// each fire fans out to; "" for the queue's default target.
func scheduleWhere(t queue.ScheduleTask) string {
	switch {
	case len(t.Targets) > 0 && t.FanOutLimit > 0:
		return fmt.Sprintf("fans out to %s, %d at once", strings.Join(t.Targets, ", "), t.FanOutLimit)
	case len(t.Targets) > 0:
		return "fans out to " + strings.Join(t.Targets, ", ")
	case t.Target != "":
		return "on " + t.Target
	}
	return ""
}

// overlapText and misfireText say a schedule's policies in a few words; the
// column's title explains them.
func overlapText(o queue.Overlap) string {
	if o == queue.OverlapAllow {
		return "runs even while running"
	}
	return "skips while running"
}

func misfireText(m queue.Misfire) string {
	if m == queue.MisfireSkip {
		return "skips what was missed"
	}
	return "runs once after downtime"
}

// lastFire says what became of the latest fire time handled; "" before the first.
func lastFire(s *queue.Schedule) string {
	if s.LastFireAt.IsZero() {
		return ""
	}
	at := "fire of " + s.LastFireAt.UTC().Format("2006-01-02 15:04:05") + " UTC"
	switch s.LastFireOutcome {
	case queue.FireEnqueued:
		if s.LastFireMissed > 0 {
			return fmt.Sprintf("%s: ran once for it and %d missed before it", at, s.LastFireMissed)
		}
		return at + ": ran"
	case queue.FireSkippedOverlap:
		return at + ": skipped, the last run was unfinished"
	case queue.FireSkippedMisfire:
		return fmt.Sprintf("%s: skipped with %d missed while down", at, s.LastFireMissed)
	}
	return at + ": " + string(s.LastFireOutcome)
}

// showFireTimes shows fire times in their zone and in UTC, to the minute,
// or to the second when any of them falls within a minute.
func showFireTimes(ts []time.Time) []templates.FireTime {
	layout := "2006-01-02 15:04"
	for _, t := range ts {
		if t.Second() != 0 {
			layout = "2006-01-02 15:04:05"
			break
		}
	}
	out := make([]templates.FireTime, len(ts))
	for i, t := range ts {
		out[i] = templates.FireTime{Local: t.Format("Mon " + layout + " MST"), UTC: t.UTC().Format(layout) + " UTC",
			Full: t.UTC().Format(time.RFC3339)}
	}
	return out
}

// scheduleURL is the base of a schedule's form and button URLs (names hold
// only letters, digits and _ . : -, nothing a path must escape).
func scheduleURL(name string) string { return "/schedules/" + name }

// scheduleAnchor is a schedule's row on the schedules page.
func scheduleAnchor(name string) string { return "/schedules#schedule-" + name }
