package agentimport

import "fmt"

// Line is one line of the import's report: something of an Agent job that is
// not imported, or is imported but differs from Agent and needs the DBA's eye
// before the job is enabled.
type Line struct {
	Job     string // the Agent job's name; "" for the import as a whole
	Subject string // `step 2 "copy files"`, `schedule "nightly"`; "" for the job itself
	Skipped bool   // Subject (or the job) is not imported
	Text    string
}

func (l Line) String() string {
	verdict := "check"
	if l.Skipped {
		verdict = "not imported"
	}
	where := ""
	switch {
	case l.Job != "" && l.Subject != "":
		where = fmt.Sprintf("job %q, %s: ", l.Job, l.Subject)
	case l.Job != "":
		where = fmt.Sprintf("job %q: ", l.Job)
	}
	return where + verdict + ": " + l.Text
}
