package templates

// Targets is the targets page (docs/TARGETS.md): every target a node
// serves, as the nodes' checks found it, and what ReadPast's sessions do
// there now.
type Targets struct {
	Page
	Targets []TargetView
}

// TargetView is one target on the targets page.
type TargetView struct {
	Name    string
	Dialect string
	Version string
	Tags    []string
	Served  bool
	Checks  []TargetCheck // one per live node that serves it
	// Running are the tasks running on it now, each with its session.
	Running []RunningOn
	// Activity is what those sessions do now, read by this node (nil: this
	// node does not serve the target, or nothing runs there).
	Activity *ActivityView
}

// TargetCheck is one node's latest check of a target.
type TargetCheck struct {
	Node      string
	Reachable bool
	Latency   string
	Checked   Time
	Error     string
	Sessions  int // the sessions the node's pool holds open there
}

// RunningOn is a task running on a target.
type RunningOn struct {
	TaskID  int64
	TaskURL string
	Node    string
	Session string
	For     string
}

// ActivityView is what some sessions of a target do now.
type ActivityView struct {
	Target   string
	Missing  string // the permission (or view) that is missing, as a sentence
	Note     string // why there is nothing to show (SQLite; another node's default)
	Error    string
	Sessions []SessionView
}

// SessionView is one session's activity; Blocker marks a session that is
// not ReadPast's task but blocks one.
type SessionView struct {
	Session   string
	TaskID    int64
	TaskURL   string
	Blocker   bool
	State     string
	Command   string
	Wait      string
	WaitFor   string
	BlockedBy string
	Elapsed   string
	CPU       string
	Reads     string
	Statement string
	App       string
}

// FanOut is one fan-out's page: a row per target.
type FanOut struct {
	Page
	Group   string
	Summary string // "3 of 40 failed"
	Counts  []KV
	Rows    []FanOutRow
	// CanRetry: an operator sees the retry of the failed ones.
	CanRetry bool
	Failed   int
}

// FanOutRow is one target's task of a fan-out.
type FanOutRow struct {
	Target   string
	TaskID   int64
	TaskURL  string
	State    string
	Duration string
	Rows     string
	Error    string
}
