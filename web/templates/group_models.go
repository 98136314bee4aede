package templates

// Groups is the groups page: every concurrency group with its limit, what
// runs and waits, and who last changed it.
type Groups struct {
	Page
	Groups []GroupRow
}

// GroupRow is one concurrency group.
type GroupRow struct {
	Name       string
	MaxRunning string // the limit as the form shows it
	Running    int
	Pending    int64
	TasksURL   string // the group's tasks
	UpdateURL  string // where the limit form posts
	UpdatedBy  string
	UpdatedAt  Time
	Error      string // a refused limit, shown by its field
}
