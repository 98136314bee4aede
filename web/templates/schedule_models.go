package templates

// Schedules is the schedules page: one row per schedule.
type Schedules struct {
	Page
	Rows []ScheduleRow
}

// ScheduleRow is one schedule with its next fire times, its latest run and
// its buttons.
type ScheduleRow struct {
	ID       int64
	Name     string
	Cron     string
	Zone     string
	Paused   bool
	Overlap  string // the overlap policy in a few words
	Misfire  string // the misfire policy in a few words
	Queue    string
	Where    string // its target, or the targets it fans out to; "" for the queue's default
	Body     string // first line, shortened
	BodyFull string // the whole body, shown on hover
	TasksURL string // the schedule's tasks
	Next     []FireTime
	LastFire string // the latest fire time handled and its outcome, or ""
	LastRun  *ScheduleRun
	Actions  []Action // Run now, Pause or Resume (the operator's)
	EditURL  string   // "" for a viewer
	// DeleteURL leads to the confirmation page; "" for a viewer.
	DeleteURL string
}

// FireTime is one fire time, in the schedule's zone and in UTC.
type FireTime struct {
	Local string // e.g. "Tue 2026-03-31 01:00 CEST"
	UTC   string // e.g. "2026-03-30 23:00 UTC"
	Full  string // RFC 3339 UTC, for the tooltip and datetime
}

// ScheduleRun is a schedule's latest run: a task, its state now.
type ScheduleRun struct {
	TaskID   int64
	URL      string
	State    string // "" once retention purged the task
	Finished Time
}

// ScheduleForm holds the schedule form's fields as typed.
type ScheduleForm struct {
	Name           string
	Cron           string
	TimeZone       string
	Queue          string
	Body           string
	Priority       string
	Group          string
	MaxAttempts    string
	TimeoutSeconds string
	Transactional  bool
	Paused         bool // create paused (the create form only)
	Overlap        string
	Misfire        string
	Target         string // "": the queue's default target
	Targets        string // a fan-out's names and tags, comma-separated; "": none
	FanOutLimit    string // how many of them run at once; "": all
}

// ScheduleEdit is the form that creates a schedule or edits one, with the
// preview of its next fire times once asked for.
type ScheduleEdit struct {
	Page
	Edit    bool   // editing an existing schedule: the name is fixed
	Action  string // where the form posts
	Form    ScheduleForm
	Errors  map[string]string
	Preview []FireTime
	Zones   []string // suggestions for the time zone field
	Queues  []string
}

// ScheduleDelete is the page that asks before a schedule is deleted.
type ScheduleDelete struct {
	Page
	Name     string
	Action   string
	TasksURL string
}
