package agentimport

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"readpast/internal/sqlrun"
)

// Reading msdb: three queries, each a plain read of a few definition rows
// (one per job, step and attached schedule: nothing of Agent's history), at
// the login's default READ COMMITTED. No lock hints: the tables are small and
// Agent writes them only when a DBA edits a job. The three reads are not one
// snapshot; a job edited while the import reads is read half before, half
// after, as SSMS's own scripting would, and importing again fixes it.

// Read returns the jobs the SQL Server Agent of db defines, by name, each
// with its category, steps and schedules. database is where Agent's tables
// are: "msdb" on a real server; tests point it at a database holding tables
// of msdb's shape.
func Read(ctx context.Context, db *sql.DB, database string) ([]Job, error) {
	if database == "" {
		database = "msdb"
	}
	tables := strings.NewReplacer("{db}", quoteName(database))
	jobs, ids, err := readJobs(ctx, db, tables.Replace(jobsQuery))
	if err != nil {
		return nil, err
	}
	if err := readSteps(ctx, db, tables.Replace(stepsQuery), jobs, ids); err != nil {
		return nil, err
	}
	if err := readSchedules(ctx, db, tables.Replace(schedulesQuery), jobs, ids); err != nil {
		return nil, err
	}
	return jobs, nil
}

const jobsQuery = `SELECT j.job_id, j.name, j.enabled, j.description, j.start_step_id, c.name,
    j.notify_level_email, j.notify_level_page, j.delete_level
FROM {db}.dbo.sysjobs AS j
LEFT JOIN {db}.dbo.syscategories AS c ON c.category_id = j.category_id
ORDER BY j.name;`

const stepsQuery = `SELECT job_id, step_id, step_name, subsystem, command, database_name, database_user_name,
    output_file_name, on_success_action, on_success_step_id, on_fail_action, on_fail_step_id,
    retry_attempts, retry_interval
FROM {db}.dbo.sysjobsteps
ORDER BY job_id, step_id;`

const schedulesQuery = `SELECT js.job_id, s.schedule_id, s.name, s.enabled, s.freq_type, s.freq_interval,
    s.freq_subday_type, s.freq_subday_interval, s.freq_relative_interval, s.freq_recurrence_factor,
    s.active_start_date, s.active_end_date, s.active_start_time, s.active_end_time
FROM {db}.dbo.sysjobschedules AS js
JOIN {db}.dbo.sysschedules AS s ON s.schedule_id = js.schedule_id
ORDER BY js.job_id, s.name, s.schedule_id;`

// readJobs returns the jobs and, by job_id, their index.
func readJobs(ctx context.Context, db *sql.DB, query string) ([]Job, map[string]int, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, readErr("sysjobs", err)
	}
	defer rows.Close()
	var jobs []Job
	ids := map[string]int{}
	for rows.Next() {
		var (
			id          []byte
			j           Job
			enabled     int
			description sql.NullString
			category    sql.NullString
		)
		if err := rows.Scan(&id, &j.Name, &enabled, &description, &j.StartStepID, &category,
			&j.NotifyEmail, &j.NotifyPage, &j.DeleteLevel); err != nil {
			return nil, nil, readErr("sysjobs", err)
		}
		j.Enabled, j.Description, j.Category = enabled != 0, description.String, category.String
		ids[string(id)] = len(jobs)
		jobs = append(jobs, j)
	}
	return jobs, ids, readErr("sysjobs", rows.Err())
}

func readSteps(ctx context.Context, db *sql.DB, query string, jobs []Job, ids map[string]int) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return readErr("sysjobsteps", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                        []byte
			s                         Step
			command, database, user   sql.NullString
			outputFile                sql.NullString
			onSuccessStep, onFailStep sql.NullInt64
		)
		if err := rows.Scan(&id, &s.ID, &s.Name, &s.Subsystem, &command, &database, &user, &outputFile,
			&s.OnSuccessAction, &onSuccessStep, &s.OnFailAction, &onFailStep, &s.RetryAttempts, &s.RetryInterval); err != nil {
			return readErr("sysjobsteps", err)
		}
		s.Command, s.Database, s.DatabaseUser, s.OutputFile = command.String, database.String, user.String, outputFile.String
		s.OnSuccessStepID, s.OnFailStepID = int(onSuccessStep.Int64), int(onFailStep.Int64)
		if i, ok := ids[string(id)]; ok {
			jobs[i].Steps = append(jobs[i].Steps, s)
		}
	}
	return readErr("sysjobsteps", rows.Err())
}

func readSchedules(ctx context.Context, db *sql.DB, query string, jobs []Job, ids map[string]int) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return readErr("sysschedules", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id        []byte
			s         Schedule
			enabled   int
			startDate sql.NullInt64
		)
		if err := rows.Scan(&id, &s.ID, &s.Name, &enabled, &s.FreqType, &s.FreqInterval,
			&s.FreqSubdayType, &s.FreqSubdayInterval, &s.FreqRelativeInterval, &s.FreqRecurrenceFactor,
			&startDate, &s.ActiveEndDate, &s.ActiveStartTime, &s.ActiveEndTime); err != nil {
			return readErr("sysschedules", err)
		}
		s.Enabled, s.ActiveStartDate = enabled != 0, int(startDate.Int64)
		if i, ok := ids[string(id)]; ok {
			jobs[i].Schedules = append(jobs[i].Schedules, s)
		}
	}
	return readErr("sysschedules", rows.Err())
}

// readErr says which of Agent's tables could not be read, and what to do.
func readErr(table string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("reading SQL Server Agent's %s failed (the login given with --from needs SELECT on msdb's sysjobs, sysjobsteps, sysjobschedules, sysschedules and syscategories; a sysadmin has it): %w",
		table, sqlrun.DescribeMSSQL(err))
}
