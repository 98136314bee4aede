// Package templates holds the dashboard's templ components. They know nothing
// of storage: handlers in internal/web fill the view-model structs below, with
// times and durations already formatted for display.
package templates

// Page is what the layout of every page needs.
type Page struct {
	Title      string
	Nav        string // the active section: overview, tasks, schedules, logs, nodes, enqueue
	CSSURL     string
	JSURL      string
	TimeJSURL  string // the UTC/local toggle's script, on every page
	CSRFField  string // the form field name of the CSRF token
	CSRF       string // the token to put in every form
	CanOperate bool   // the operator role: forms that change things are shown
	User       string
	Version    string
	Node       string
	Live       Live // which live view the websocket should follow; empty: none
	Totals     []StateCount
	Flash      string // a one-line notice after a redirect
	Refresh    int    // seconds after which the page reloads itself (a bulk operation's progress); 0: never
	// RefreshURL is what the reload loads; "": the page's own URL. A page
	// reached at a fragment (a form's redirect to #runs) needs it: a refresh
	// to the same URL and fragment only scrolls.
	RefreshURL string
}

// Live names the websocket view of a page and its query (the page's filters).
type Live struct {
	View  string
	Query string
}

// StateCount is a count of tasks in one state.
type StateCount struct {
	State string
	Count int64
	Key   string // live field key; the websocket updates the element carrying it
}

// Link is a navigation or pagination link.
type Link struct {
	Label string
	URL   string
}

// Action is a form button that posts to URL (cancel, retry, pause …).
type Action struct {
	Label  string
	URL    string
	Class  string
	Return string // where to go back to afterwards
	Hidden []KV
}

// KV is a label and its value, e.g. one line of a task's properties; with
// URL the value links there.
type KV struct {
	Key   string
	Value string
	URL   string
}

// Time is a formatted instant: Short for the table, Full (RFC 3339) for the tooltip.
type Time struct {
	Short string
	Full  string
}

// IsZero reports whether there is no time to show.
func (t Time) IsZero() bool { return t.Full == "" }

// Overview is the front page: throughput chart and one row per queue.
type Overview struct {
	Page
	Chart     Chart
	Ranges    []RangeLink // the chart's range switch
	SparkUnit string      // what one bar of a queue's trend counts: "min", "hour"
	Queues    []QueueRow
	NewQueue  QueueRow // the "add a queue" form, with its values after a refusal
	// The live field naming the queues, and its value when the page was
	// rendered: when they differ the page reloads to show the new set.
	QueueSetKey string
	QueueSet    string
}

// QueueRow is one queue with its counts, workers and controls.
type QueueRow struct {
	Name       string
	TasksURL   string
	Paused     bool
	Counts     []StateCount
	Busy       string // busy workers across live nodes, e.g. "3"
	Size       string // pool size across live nodes, e.g. "8"
	BusyKey    string
	SizeKey    string
	PausedKey  string
	Nodes      int
	Workers    string // the setting: workers per node; "" means the node default
	MaxRunning string // "" means no limit
	// DefaultTarget is where its tasks that name no target run; "" the
	// node's default.
	DefaultTarget string
	// ResultRows is how many result rows its attempts keep ("0": none).
	ResultRows  string
	Spark       Sparkline
	Errors      map[string]string // a refused change, by field
	ControlsURL string
	// DeleteURL is set for a queue that holds no task: it can be deleted.
	DeleteURL string
}

// TaskFilter is the tasks page's filter bar.
type TaskFilter struct {
	State    string
	Queue    string
	Group    string
	Chain    string
	Schedule string
	Text     string // the body contains it (a bounded search)
	States   []string
	Queues   []string
}

// Tasks is the tasks page: filter, one keyset page of rows, links to move on.
type Tasks struct {
	Page
	Filter TaskFilter
	Rows   []TaskRow
	Newest *Link // back to the first page
	Older  *Link
	Error  string
	Bulk   []BulkLink // "Cancel all N matching": the filter's bulk actions
	Pick   bool       // rows have checkboxes and the page the actions on the selected tasks (operator)
}

// TaskRow is one task in a table.
type TaskRow struct {
	ID      int64
	URL     string
	Queue   string
	State   string
	Waiting string // why a pending task is not claimable, in brief
	// WaitingAt, when set, is the date Waiting ends ("until" it).
	WaitingAt Time
	Priority  int
	Attempts  string
	Group     string
	Chain     string // "chain:stage" or ""
	Created   Time
	Started   Time
	Finished  Time
	Duration  string
	Body      string // first line, shortened
	Error     string // last error, shortened
	Actions   []Action
	Pick      bool // a checkbox selects it for the bulk actions on selected tasks (operator)
}

// TaskDetail is one task's page.
type TaskDetail struct {
	Page
	ID       int64
	State    string
	Queue    string
	Why      string
	Props    []KV
	Body     string
	Error    string
	Actions  []Action
	CloneURL string // the enqueue form filled with this task ("clone and edit"); "" for a viewer
	Attempts []AttemptRow
	// Activity is what the running attempt's session does now (nil: not
	// running, or nothing to show).
	Activity *ActivityView
	// Results is the result output its attempts kept (the page reads it
	// when it loads; the live updates leave it as it is).
	Results []AttemptOutput
}

// AttemptRow is one execution-log row.
type AttemptRow struct {
	ID       int64
	TaskID   int64
	TaskURL  string
	Attempt  int
	Queue    string
	Node     string
	Worker   string
	Session  string
	Started  Time
	Finished Time
	Duration string
	Outcome  string
	Rows     string
	Error    string
	Messages string
	// InProgress: the attempt is running now (read from the task, as the
	// execution log has a row only once an attempt ends).
	InProgress bool
}

// LogFilter is the log page's filter bar.
type LogFilter struct {
	Queue    string
	Outcome  string
	Task     string
	Since    string // datetime-local value, UTC
	Until    string
	Outcomes []string
	Queues   []string
}

// Logs is the live execution log.
type Logs struct {
	Page
	Filter      LogFilter
	Rows        []AttemptRow
	Newest      *Link
	Older       *Link
	ExportJSON  string
	ExportLines string
	Error       string
}

// Nodes is the nodes page.
type Nodes struct {
	Page
	Nodes []NodeView
}

// NodeView is one registered node with its pools.
type NodeView struct {
	ID        string
	Host      string
	PID       int
	Version   string
	Meta      string // host · pid · version, as known
	Started   Time
	Heartbeat Time
	Status    string // live, gone, stopped
	This      bool   // the node serving this page
	Pools     []PoolView
	Busy      []BusyWorker
}

// PoolView is one queue's pool on a node.
type PoolView struct {
	Queue   string
	Size    int
	Running int
	Paused  bool
}

// BusyWorker is a worker and the task it runs.
type BusyWorker struct {
	Worker  string
	Queue   string
	TaskID  int64
	TaskURL string
	Session string
	Started Time
	For     string
}

// TaskForm holds the enqueue form's fields as typed.
type TaskForm struct {
	Queue             string
	Body              string
	Priority          string
	Delay             string
	AvailableAt       string
	Group             string
	Chain             string
	Stage             string
	MaxAttempts       string
	TimeoutSeconds    string
	Transactional     bool
	ContinueOnFailure bool
	UniqueKey         string
	// Target names where it runs; Targets (names or tag:NAME, comma
	// separated) makes a fan-out, FanOutLimit servers at a time.
	Target      string
	Targets     string
	FanOutLimit string
	Name        string
}

// Enqueue is the enqueue page: one task, or a script that becomes a chain.
type Enqueue struct {
	Page
	Script bool // the script form is the one shown first
	Task   TaskForm
	Queues []string
	// TargetNames are the targets and tag:NAME selectors the form offers.
	TargetNames []string
	Errors      map[string]string
	Error       string
}
