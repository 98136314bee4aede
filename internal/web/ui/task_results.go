package ui

import (
	"context"

	"readpast/internal/logs"
	"readpast/web/templates"
)

// taskResults reads the result output a task's attempts kept, for its page.
func (u *views) taskResults(ctx context.Context, id int64) ([]templates.AttemptOutput, error) {
	all, err := logs.TaskResults(ctx, u.store, id)
	if err != nil {
		return nil, err
	}
	out := make([]templates.AttemptOutput, len(all))
	for i, a := range all {
		o := templates.AttemptOutput{Attempt: a.Attempt, Sets: make([]templates.ResultSetView, len(a.Sets))}
		if a.Truncated != nil {
			o.Truncated = *a.Truncated
		}
		for j, s := range a.Sets {
			v := templates.ResultSetView{Columns: s.Columns, Rows: make([][]templates.ResultCell, len(s.Rows))}
			for k, row := range s.Rows {
				cells := make([]templates.ResultCell, len(row))
				for c, val := range row {
					if val == nil {
						cells[c].Null = true
					} else {
						cells[c].Text = *val
					}
				}
				v.Rows[k] = cells
			}
			o.Sets[j] = v
		}
		out[i] = o
	}
	return out, nil
}
