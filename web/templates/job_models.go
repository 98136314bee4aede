package templates

// The jobs pages' models (docs/JOBS.md): the list, a job's page with its
// flow drawn, its runs and their duration chart, and the form.

// Jobs is the jobs page.
type Jobs struct {
	Page
	Rows []JobRow
}

// JobRow is one job in the list.
type JobRow struct {
	Name, URL, Category, Description string
	Enabled                          bool
	LastRun                          *RunRow
	NextFire                         string // "" when none
	RunAction                        *Action
}

// RunRow is one run: its outcome, trigger, start, duration and per-step strip.
type RunRow struct {
	ID                                 int64
	URL, State, Trigger, Started, Took string
	Reason                             string
	Strip                              []StripCell
	More                               int // step executions beyond the strip
	Cancel                             *Action
}

// StripCell is one step execution in a run's strip.
type StripCell struct {
	Step, State, Title, URL string
}

// JobView is a job's page.
type JobView struct {
	Page
	Name, Description, Category, Owner, Queue, Overlap string
	Enabled                                            bool
	Flow                                               Flow
	Steps                                              []JobStepRow
	Schedules                                          []JobScheduleRow
	Warnings                                           []string
	Runs                                               []RunRow
	NextURL                                            string // the next page of runs; "" on the last
	Chart                                              DurationChart
	RunURL                                             string // the Run now form's action; "" for viewers
	EditURL                                            string // "" for viewers
	StepNames                                          []string
}

// JobStepRow is one step in the steps table.
type JobStepRow struct {
	Index                                            int
	Name, Body, OnSuccess, OnFailure, Retry, Timeout string
}

// JobScheduleRow is one of a job's schedules.
type JobScheduleRow struct {
	Name, Cron, Zone, Next string
	Paused                 bool
}

// Flow is a job's flow as an SVG: step boxes, success arrows on the right
// (a plain arrow down to the next step), failure arrows on the left, and
// where a quit ends the run.
type Flow struct {
	Width, Height int
	Boxes         []FlowBox
	Arrows        []FlowArrow
	Ends          []FlowEnd
}

// FlowBox is one step's box.
type FlowBox struct {
	X, Y, W, H  int
	Label, Name string
	Unreachable bool
}

// FlowArrow is one action drawn: Kind ok (on success) or fail (on failure).
type FlowArrow struct {
	D, Kind, Title string
}

// FlowEnd marks where a step's action quits the run.
type FlowEnd struct {
	X, Y         int
	Anchor, Kind string
	Text, Title  string
}

// DurationChart is the duration of a job's last runs, oldest left, each bar
// colored by its outcome.
type DurationChart struct {
	Width, Height int
	Bars          []DurationBar
	Max           string // the longest duration, the top of the scale
	Runs          int
}

// DurationBar is one run's bar.
type DurationBar struct {
	X, Y, W, H   int
	State, Title string
	URL          string
}

// JobForm is the job form as typed.
type JobForm struct {
	Name, Description, Category, Queue string
	Schedules                          []JobScheduleForm // the job's schedules and a blank row or more
	Steps                              []StepForm
}

// JobScheduleForm is one schedule row of the job form.
type JobScheduleForm struct {
	Cron, Zone, Misfire string
}

// StepForm is one step row of the job form.
type StepForm struct {
	Name, Body, OnSuccess, OnFailure, RetryAttempts, RetryInterval string
	// Where and how the step runs: one target, or a fan-out to targets
	// ("db1, tag:prod") with how many at once; its timeout; "true" when it
	// runs in the store's transaction. Every field of a step has its input,
	// so saving the form keeps what it does not change.
	Target, Targets, FanOutLimit, Timeout, Transactional string
}

// JobEdit is the job form page.
type JobEdit struct {
	Page
	Form   JobForm
	Errors map[string]string // by field: name, steps[1].on_failure, …
	Action string
	Edit   bool // an existing job: its name is fixed
}

// RunView is one run's page: its steps in execution order.
type RunView struct {
	Page
	Run     RunRow
	Job     string
	JobURL  string
	Started string
	Steps   []RunStepRow
}

// RunStepRow is one step execution of a run.
type RunStepRow struct {
	N                                   int
	Step, State, TaskURL, Started, Took string
	Target                              string // the task's: a step that fans out lists one row per target
	Attempts                            int
	Error                               string
}

// transactionalChoices are a step's "in the store's transaction" choices, the
// default first. A select rather than a checkbox: the step rows post their
// fields as lists read by position, and an unchecked box posts nothing.
var transactionalChoices = []KV{{Key: "", Value: "no"}, {Key: "true", Value: "yes"}}
