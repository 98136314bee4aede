package templates

// AttemptOutput is the result output one attempt kept, for the task page.
type AttemptOutput struct {
	Attempt   int
	Sets      []ResultSetView
	Truncated string // what the limits left out; "" when nothing
}

// ResultSetView is one result set: its columns and the rows kept.
type ResultSetView struct {
	Columns []string
	Rows    [][]ResultCell
}

// ResultCell is one value: its text, or NULL.
type ResultCell struct {
	Text string
	Null bool
}
