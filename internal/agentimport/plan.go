package agentimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
)

// JobCreator creates one ReadPast job from its `POST /api/jobs` document. The
// error of a job that cannot be created (its name taken, a body over the
// limit) reads as a sentence for the DBA; the import reports it and goes on.
type JobCreator interface {
	CreateJob(ctx context.Context, doc []byte) error
}

// Config says what to import.
type Config struct {
	Database string   // where Agent's tables are; "" is msdb
	TimeZone string   // the server's IANA zone; "" reads it from the server
	Target   string   // the named target every step runs on; "" is the node's default
	Jobs     []string // the Agent jobs to import, by name; none is all
}

// Plan is what an import would create: every Agent job read, converted or
// not, and the report.
type Plan struct {
	Clock Clock
	Jobs  []Converted
	Lines []Line // about the import as a whole
}

// Load reads the Agent's jobs from db and converts them.
func Load(ctx context.Context, db *sql.DB, cfg Config) (Plan, error) {
	var p Plan
	clock, err := ReadClock(ctx, db, cfg.TimeZone)
	if err != nil {
		return p, err
	}
	p.Clock = clock
	jobs, err := Read(ctx, db, cfg.Database)
	if err != nil {
		return p, err
	}
	wanted := map[string]bool{}
	for _, n := range cfg.Jobs {
		wanted[n] = true
	}
	found := map[string]bool{}
	for _, j := range jobs {
		if len(wanted) > 0 && !wanted[j.Name] {
			continue
		}
		found[j.Name] = true
		p.Jobs = append(p.Jobs, Convert(j, Options{TimeZone: clock.Zone, Target: cfg.Target, Today: clock.Today}))
	}
	for _, n := range cfg.Jobs {
		if !found[n] {
			p.Lines = append(p.Lines, Line{Skipped: true, Text: fmt.Sprintf("--job %q names no Agent job on this server (names are compared exactly)", n)})
			found[n] = true
		}
	}
	return p, nil
}

// Importable counts the jobs the plan creates.
func (p Plan) Importable() int {
	n := 0
	for _, c := range p.Jobs {
		if c.Doc != nil {
			n++
		}
	}
	return n
}

// Write prints the plan for --dry-run: the server's clock, then each job with
// the document that would create it and the lines of the report about it.
func (p Plan) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "SQL Server Agent's server: time zone %s (%s now), date %s.\n", p.Clock.Zone, formatOffset(p.Clock.Offset), formatDate(p.Clock.Today))
	for _, l := range p.Lines {
		fmt.Fprintln(&b, l)
	}
	for _, c := range p.Jobs {
		b.WriteString("\n")
		if c.Doc == nil {
			fmt.Fprintf(&b, "== job %q: not imported\n", c.Job)
		} else {
			doc, err := c.Doc.JSON()
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "== job %q: would be created, paused\n%s", c.Job, doc)
		}
		for _, l := range c.Lines {
			fmt.Fprintln(&b, l)
		}
	}
	fmt.Fprintf(&b, "\n%d Agent jobs read: %d would be created paused, %d not imported.\n", len(p.Jobs), p.Importable(), len(p.Jobs)-p.Importable())
	_, err := io.WriteString(w, b.String())
	return err
}

// Create creates each job the plan imports through c and prints, for each
// job, what became of it and the lines of the report. A job that cannot be
// created does not stop the others; the error names those that failed.
func (p Plan) Create(ctx context.Context, c JobCreator, w io.Writer) error {
	for _, l := range p.Lines {
		fmt.Fprintln(w, l)
	}
	var failed []string
	created := 0
	for _, j := range p.Jobs {
		switch {
		case j.Doc == nil:
			fmt.Fprintf(w, "job %q: not imported\n", j.Job)
		default:
			doc, err := j.Doc.JSON()
			if err == nil {
				err = c.CreateJob(ctx, doc)
			}
			if err != nil {
				failed = append(failed, fmt.Sprintf("%q (%v)", j.Job, err))
				fmt.Fprintf(w, "job %q: not created: %v\n", j.Job, err)
				continue
			}
			created++
			fmt.Fprintf(w, "job %q: created, paused\n", j.Job)
		}
		for _, l := range j.Lines {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintf(w, "%d Agent jobs read: %d created paused, %d not imported, %d failed.\n", len(p.Jobs), created, len(p.Jobs)-p.Importable(), len(failed))
	if len(failed) > 0 {
		return errors.New("these jobs could not be created: " + strings.Join(failed, "; "))
	}
	return nil
}
