package templates

// BulkLink is one "Cancel all N matching" link of the tasks page: to the
// confirmation of a bulk operation on the page's filter.
type BulkLink struct {
	Label string
	URL   string
	Class string
}

// BulkConfirm asks before a bulk operation starts: what it does to how
// many tasks, and which.
type BulkConfirm struct {
	Page
	Action   string  // cancel, retry, delete
	Verb     string  // Cancel, Retry, Delete
	Count    string  // the matching tasks, formatted ("12 345", "more than 100 000")
	None     bool    // nothing matches: nothing to confirm
	Filter   []KV    // the filter, as the form sends it back
	IDs      []int64 // or the tasks selected
	Describe string  // the filter in words
	Explain  string  // what happens to the tasks it does not apply to
	BackURL  string  // the tasks page of the filter
}

// BulkView is a bulk operation's progress.
type BulkView struct {
	Page
	ID        int64
	Action    string
	Selection string
	Matched   int64
	Done      int64
	Skipped   int64
	Percent   int
	Status    string // waiting for a node, running on node x, finished, stopped: …
	Finished  bool
	Error     string
	Created   Time
	CreatedBy string
	Updated   Time
	TasksURL  string
}
